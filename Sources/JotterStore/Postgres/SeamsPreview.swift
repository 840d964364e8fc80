// TEMPORARY: the seams types until they land on main (deleted at the merge).
public typealias StoreCompletion<Value: Sendable> = @Sendable (Result<Value, StoreError>) -> Void
public struct NoteChange: Sendable, Hashable {
    public var note: NoteRecord
    public var event: NoteEvent
    public init(note: NoteRecord, event: NoteEvent) { self.note = note; self.event = event }
}
public enum NoteWriteOutcome: Sendable, Hashable {
    case done(NoteChange)
    case notFound
    case versionMismatch(current: NoteRecord)
}
public struct UploadsAdded: Sendable, Hashable {
    public var uploads: [UploadRecord]
    public var change: NoteChange?
    public init(uploads: [UploadRecord], change: NoteChange?) { self.uploads = uploads; self.change = change }
}
public struct UploadRemoved: Sendable, Hashable {
    public var upload: UploadRecord
    public var change: NoteChange?
    public init(upload: UploadRecord, change: NoteChange?) { self.upload = upload; self.change = change }
}
public struct UploadAttached: Sendable, Hashable {
    public var upload: UploadRecord
    public var events: [NoteEvent]
    public init(upload: UploadRecord, events: [NoteEvent]) { self.upload = upload; self.events = events }
}
extension NewUpload { var id: String { temporaryPath } }
extension UploadRecord { static func blobKey(_ id: String) -> String { "uploads/" + id } }
extension StoreError {
    static let unavailable = StoreError.system("unavailable")
    static func postgresUnavailable(_ message: String) -> StoreError { .system("unavailable: " + message) }
}
