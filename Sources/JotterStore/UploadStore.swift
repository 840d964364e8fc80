#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JotterSystem

/// A stored file's row: what the API shows of an upload.
public struct UploadRecord: Sendable, Hashable {
    /// 24 lowercase hex digits, chosen by the store.
    public var id: String
    public var filename: String
    public var contentType: String
    public var size: Int64
    public var sha256: String
    /// Unix seconds, UTC.
    public var createdAt: Int64
    /// The note it is attached to, if any.
    public var noteID: Int64?

    public init(id: String, filename: String, contentType: String, size: Int64, sha256: String, createdAt: Int64, noteID: Int64?) {
        self.id = id
        self.filename = filename
        self.contentType = contentType
        self.size = size
        self.sha256 = sha256
        self.createdAt = createdAt
        self.noteID = noteID
    }
}

extension UploadRecord {
    /// A new random upload id: 24 lowercase hex digits (96 bits from the system's entropy).
    public static func newID() -> String {
        SystemRandom.hex(bytes: 12)
    }

    /// The key of upload `id`'s bytes in the store's `BlobStore` (`uploads/<id>`; with the
    /// local folder, the file `<data>/uploads/<id>`).
    public static func blobKey(_ id: String) -> String { "uploads/" + id }
}

extension Array where Element == UploadRecord {
    /// These uploads by the note each is attached to, only for the notes of `noteIDs` (the
    /// stores read the attachments of a page's span of ids, which may hold other notes').
    func byNote(keeping noteIDs: [Int64]) -> [Int64: [UploadRecord]] {
        var result: [Int64: [UploadRecord]] = [:]
        guard !isEmpty else { return result }  // most pages: no set of ids to build
        let wanted = Set(noteIDs)
        for upload in self {
            if let note = upload.noteID, wanted.contains(note) { result[note, default: []].append(upload) }
        }
        return result
    }
}

/// A file whose bytes are already stored (`DataStore.blobs`, key `UploadRecord.blobKey(id)`),
/// to be recorded by `UploadStore.addUploads`.
public struct NewUpload: Sendable, Hashable {
    /// Chosen before the bytes were stored (`UploadRecord.newID()`), never by the client.
    public var id: String
    public var filename: String
    public var contentType: String
    public var size: Int64
    public var sha256: String

    public init(id: String, filename: String, contentType: String, size: Int64, sha256: String) {
        self.id = id
        self.filename = filename
        self.contentType = contentType
        self.size = size
        self.sha256 = sha256
    }
}

/// Stored uploads, each scoped by its `Owner`. Attaching a file and changing its note's
/// version are one transaction.
///
/// Bytes are stored before their row: the caller puts them in the blob store, then calls
/// `addUploads`, which deletes them again when it does not commit them. Deleting rows deletes
/// the bytes once the delete has committed; bytes left by a crash in between are orphans the
/// store sweeps.
public protocol UploadStore: Sendable {
    func upload(id: String, owner: Owner) throws -> UploadRecord?
    /// One page of `owner`'s uploads, newest first, after the `query.after` cursor and filtered
    /// by `query.attachment`; nil when `query.after` names no upload of theirs.
    func uploads(_ query: UploadQuery, owner: Owner) throws -> [UploadRecord]?
    /// The attachments of each of `noteIDs` (oldest first); notes without any are absent.
    func attachments(of noteIDs: [Int64], owner: Owner) throws -> [Int64: [UploadRecord]]
    /// A note and its attachments, read together (one snapshot).
    func noteWithAttachments(id: Int64, owner: Owner) throws -> (NoteRecord, [UploadRecord])?
    /// A page of notes, each with its attachments, read together (one snapshot), as `NoteStore.notes` selects them.
    func notesWithAttachments(_ query: NoteQuery, owner: Owner) throws -> NotePage

    /// Records uploads whose bytes are stored, attached to `noteID` when given (the note's
    /// version grows: a `note.updated` event). nil when `noteID` names no note of `owner`'s;
    /// then, as on failure, the bytes are deleted.
    func addUploads(_ uploads: [NewUpload], noteID: Int64?, owner: Owner, completion: @escaping StoreCompletion<UploadsAdded?>)
    /// `addUploads` under an `Idempotency-Key` claimed in the same transaction, which also keeps
    /// a reference answer (`Location: /uploads/{first id}`); refused, without a row, when the key
    /// is held, was used for another request, or has an answer (the bytes are deleted then too).
    /// No note (`.done(nil)`) leaves the key free.
    func addUploads(
        _ uploads: [NewUpload], noteID: Int64?, owner: Owner, claiming claim: IdempotencyKeyClaim,
        completion: @escaping StoreCompletion<KeyedOutcome<UploadsAdded?>>)
    /// Deletes an upload (its note, if any, changes version); nil when there is none.
    func deleteUpload(id: String, owner: Owner, completion: @escaping StoreCompletion<UploadRemoved?>)
    /// Attaches an upload to `noteID` (nil: to no note). The note it leaves and the note it
    /// joins each change version (an event each); attaching it where it already is changes
    /// nothing. nil when the upload or the note does not exist.
    func attachUpload(id: String, noteID: Int64?, owner: Owner, completion: @escaping StoreCompletion<UploadAttached?>)
}

/// What `UploadStore.addUploads` stored.
public struct UploadsAdded: Sendable, Hashable {
    public var uploads: [UploadRecord]
    /// The note they were attached to, with its event.
    public var change: NoteChange?
}

/// What `UploadStore.deleteUpload` removed.
public struct UploadRemoved: Sendable, Hashable {
    public var upload: UploadRecord
    /// The note it was attached to, with its event.
    public var change: NoteChange?
}

/// What `UploadStore.attachUpload` changed.
public struct UploadAttached: Sendable, Hashable {
    /// The upload as it is now attached.
    public var upload: UploadRecord
    /// The events of the note it left and the note it joined (none when nothing changed).
    public var events: [NoteEvent]
}

/// A page request for `UploadStore.uploads(_:)`.
///
/// ```swift
/// let loose = try store.uploads(UploadQuery(limit: 50, attachment: .unattached))
/// ```
public struct UploadQuery: Sendable, Hashable {
    /// Which uploads a listing shows.
    public enum Attachment: Sendable, Hashable {
        /// Every upload.
        case any
        /// Only uploads attached to no note.
        case unattached
        /// Only the attachments of this note.
        case note(Int64)
    }

    /// At most this many uploads (0 or less gives none).
    public var limit: Int
    /// A cursor: the id of the last upload of the previous page (uploads older than it follow).
    public var after: String?
    public var attachment: Attachment

    public init(limit: Int = 100, after: String? = nil, attachment: Attachment = .any) {
        self.limit = limit
        self.after = after
        self.attachment = attachment
    }
}
