import Foundation
@testable import JotterStore

/// The store's writes as values, so that a test can list several and run each through the
/// store's own operation (`createNote`, `updateNote`, … — each with its own outcome type),
/// and compare outcomes with `==`.
enum NoteWrite: Sendable {
    case create(body: String)
    case update(id: Int64, body: String, ifVersion: Int64?)
    case delete(id: Int64, ifVersion: Int64?)
    case touch(id: Int64, ifVersion: Int64?)
    case addUploads([NewUpload], noteID: Int64?)
    case deleteUpload(id: String)
    case attachUpload(id: String, noteID: Int64?)
}

/// Every outcome of a `NoteWrite`, in one type for comparisons.
enum NoteWriteResult: Sendable, Hashable {
    case done(NoteRecord, NoteEvent)
    case notFound
    case versionMismatch(current: NoteRecord)
    case noRevision(current: NoteRecord)
    case cannotMerge(current: NoteRecord)
    case uploadsAdded([UploadRecord], note: NoteRecord?, event: NoteEvent?)
    case uploadDeleted(UploadRecord, note: NoteRecord?, event: NoteEvent?)
    case uploadAttached(UploadRecord, events: [NoteEvent])

    init(_ outcome: NoteWriteOutcome) {
        switch outcome {
        case .done(let change): self = .done(change.note, change.event)
        case .notFound: self = .notFound
        case .versionMismatch(let current): self = .versionMismatch(current: current)
        case .noRevision(let current): self = .noRevision(current: current)
        case .cannotMerge(let current, _): self = .cannotMerge(current: current)
        }
    }

    /// The note of a `.done` result.
    var note: NoteRecord? {
        if case .done(let note, _) = self { return note }
        return nil
    }

    /// The event of a `.done` result.
    var event: NoteEvent? {
        if case .done(_, let event) = self { return event }
        return nil
    }
}

extension DataStore {
    /// Runs `write` through its operation; `completion` gets the outcome as a `NoteWriteResult`.
    func submit(_ write: NoteWrite, owner: Owner, completion: @escaping @Sendable (Result<NoteWriteResult, StoreError>) -> Void) {
        switch write {
        case .create(let body):
            createNote(body: body, owner: owner) { completion($0.map { .done($0.note, $0.event) }) }
        case .update(let id, let body, let ifVersion):
            updateNote(id: id, body: body, ifVersion: ifVersion, owner: owner) { completion($0.map(NoteWriteResult.init)) }
        case .touch(let id, let ifVersion):
            updateNote(id: id, body: nil, ifVersion: ifVersion, owner: owner) { completion($0.map(NoteWriteResult.init)) }
        case .delete(let id, let ifVersion):
            deleteNote(id: id, ifVersion: ifVersion, owner: owner) { completion($0.map(NoteWriteResult.init)) }
        case .addUploads(let uploads, let noteID):
            addUploads(uploads, noteID: noteID, owner: owner) { result in
                completion(
                    result.map { added in
                        added.map { .uploadsAdded($0.uploads, note: $0.change?.note, event: $0.change?.event) } ?? .notFound
                    })
            }
        case .deleteUpload(let id):
            deleteUpload(id: id, owner: owner) { result in
                completion(
                    result.map { removed in
                        removed.map { .uploadDeleted($0.upload, note: $0.change?.note, event: $0.change?.event) } ?? .notFound
                    })
            }
        case .attachUpload(let id, let noteID):
            attachUpload(id: id, noteID: noteID, owner: owner) { result in
                completion(result.map { attached in attached.map { .uploadAttached($0.upload, events: $0.events) } ?? .notFound })
            }
        }
    }

    /// Runs `write` and waits until it is durable.
    func perform(_ write: NoteWrite, owner: Owner) throws -> NoteWriteResult {
        try StoreWait.wait { submit(write, owner: owner, completion: $0) }
    }

    /// Stores the file at `path` (moved) as an upload's bytes, ready for `.addUploads`.
    func stage(_ path: String, size: Int64, filename: String = "f.bin", sha256: String = String(repeating: "0", count: 64)) throws -> NewUpload {
        let id = UploadRecord.newID()
        try blobs.put(UploadRecord.blobKey(id), movingFile: path)
        return NewUpload(id: id, filename: filename, contentType: "application/octet-stream", size: size, sha256: sha256)
    }

    /// Whether upload `id`'s bytes are in the blob store.
    func hasContent(_ id: String) throws -> Bool { try blobs.head(UploadRecord.blobKey(id)) != nil }
}

extension SQLiteStore {
    /// Where upload `id`'s bytes are on disk.
    func contentPath(of id: String) -> String { dataDirectory + "/" + UploadRecord.blobKey(id) }
}
