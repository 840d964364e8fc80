/// A change submitted to a `NoteStore`.
///
/// ```swift
/// store.submit(.update(id: 42, body: "changed", ifVersion: 3)) { result in … }
/// ```
public enum NoteWrite: Sendable {
    /// A new note at version 1 (`created_at` = `updated_at` = now).
    case create(body: String)
    /// Replaces the body; `ifVersion` nil = unconditional.
    case update(id: Int64, body: String, ifVersion: Int64?)
    /// Removes the note; `ifVersion` nil = unconditional.
    case delete(id: Int64, ifVersion: Int64?)
    /// Bumps version and `updated_at` without changing the body (attachments added or removed);
    /// emits `note.updated`.
    case touch(id: Int64, ifVersion: Int64?)
    /// Stores received files (moving them out of their temporary files), attached to `noteID`
    /// when given: the note must exist, and its version grows (a `note.updated` event).
    case addUploads([NewUpload], noteID: Int64?)
    /// Deletes an upload; its note, if any, changes version (a `note.updated` event).
    case deleteUpload(id: String)
    /// Attaches an upload to `noteID` (nil: to no note). The note it leaves and the note it
    /// joins each change version (a `note.updated` event each); attaching it where it already
    /// is changes nothing. `.notFound` when the upload or the note does not exist.
    case attachUpload(id: String, noteID: Int64?)
}

/// The outcome of a `NoteWrite`.
///
/// `.notFound` is decided before the version: a missing note is missing whatever the
/// preconditions (RFC 9110 §13.2.1).
public enum NoteWriteResult: Sendable, Hashable {
    /// The write committed. For a delete, the note as it was before deletion.
    case done(NoteRecord, NoteEvent)
    /// No note has that id.
    case notFound
    /// `ifVersion` did not match; nothing changed. `current` is the note as stored.
    case versionMismatch(current: NoteRecord)
    /// The stored uploads, and the note they were attached to with its event.
    case uploadsAdded([UploadRecord], note: NoteRecord?, event: NoteEvent?)
    /// The deleted upload, and the note it was attached to with its event.
    case uploadDeleted(UploadRecord, note: NoteRecord?, event: NoteEvent?)
    /// The upload as it is now attached, and the events of the notes it left and joined.
    case uploadAttached(UploadRecord, events: [NoteEvent])
}

/// Write counters of a store, to see how well writes share commits.
public struct WriteStatistics: Sendable, Hashable {
    /// Transactions committed (each holding one batch of writes).
    public var commits: Int
    /// Writes completed (successfully or not) through those commits.
    public var writes: Int

    public init(commits: Int, writes: Int) {
        self.commits = commits
        self.writes = writes
    }
}
