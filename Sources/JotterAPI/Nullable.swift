/// An optional field of a wire type that is `null` in the JSON while nil, never absent, so the
/// type's `Codable` conformance is synthesized (a plain optional is left out while nil).
///
/// ```swift
/// struct Page: Codable {
///     var notes: [Note]
///     @Nullable var next: String?   // "next":null on the last page
/// }
/// ```
///
/// Decoding takes an absent field as nil too.
@propertyWrapper
public struct Nullable<Wrapped: Codable & Sendable & Hashable>: Codable, Sendable, Hashable {
    public var wrappedValue: Wrapped?

    public init(wrappedValue: Wrapped?) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws { wrappedValue = try Wrapped?(from: decoder) }

    public func encode(to encoder: any Encoder) throws { try wrappedValue.encode(to: encoder) }
}

extension KeyedDecodingContainer {
    /// A `@Nullable` property of a synthesized `init(from:)`: nil when absent or `null`.
    public func decode<Wrapped>(_ type: Nullable<Wrapped>.Type, forKey key: Key) throws -> Nullable<Wrapped> {
        Nullable(wrappedValue: try decodeIfPresent(Wrapped.self, forKey: key))
    }
}

/// A property wrapper of the wire types that prints, debug-prints and dumps as the value it
/// wraps: `print(note)` shows `_createdAt: 2026-11-30 14:35:40 +0000`, not the wrapper.
public protocol ShownAsWrappedValue: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    associatedtype WrappedValue
    var wrappedValue: WrappedValue { get }
}

extension ShownAsWrappedValue {
    public var description: String { String(describing: wrappedValue) }
    public var debugDescription: String { String(reflecting: wrappedValue) }
    public var customMirror: Mirror { Mirror(reflecting: wrappedValue) }
}

extension Nullable: ShownAsWrappedValue {}
extension Timestamped: ShownAsWrappedValue {}
extension OneOrMany: ShownAsWrappedValue {}
