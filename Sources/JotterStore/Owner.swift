/// Whose data a store operation reads or changes: every note, upload and event belongs to one
/// user, and every query is scoped by it.
///
/// `unclaimed` (0) holds what was stored while no user existed (a data folder from before
/// accounts, or a server with authentication off and no users); the first user created takes
/// it over.
public struct Owner: Sendable, Hashable, CustomStringConvertible {
    /// The user's id (`UserRecord.id`); 0 for `unclaimed`.
    public var id: Int64

    public init(id: Int64) { self.id = id }

    /// Data that belongs to no user yet.
    public static let unclaimed = Owner(id: 0)

    public var description: String { id == 0 ? "unclaimed" : "user \(id)" }
}
