@testable import JotterStore

/// The store's reads and writes on the unclaimed owner (a data folder with no users yet), for
/// the tests of behaviour that does not depend on who owns what.
extension DataStore {
    func note(id: Int64) throws -> NoteRecord? { try note(id: id, owner: .unclaimed) }
    func notes(_ query: NoteQuery) throws -> [NoteRecord] { try notes(query, owner: .unclaimed) }
    func perform(_ write: NoteWrite) throws -> NoteWriteResult { try perform(write, owner: .unclaimed) }
    func submit(_ write: NoteWrite, completion: @escaping @Sendable (Result<NoteWriteResult, StoreError>) -> Void) {
        submit(write, owner: .unclaimed, completion: completion)
    }
    func events(after: Int64, limit: Int) throws -> [NoteEvent]? { try events(after: after, limit: limit, owner: .unclaimed) }
    func upload(id: String) throws -> UploadRecord? { try upload(id: id, owner: .unclaimed) }
    func uploads(_ query: UploadQuery) throws -> [UploadRecord]? { try uploads(query, owner: .unclaimed) }
    func attachments(of noteIDs: [Int64]) throws -> [Int64: [UploadRecord]] { try attachments(of: noteIDs, owner: .unclaimed) }
    func noteWithAttachments(id: Int64) throws -> (NoteRecord, [UploadRecord])? { try noteWithAttachments(id: id, owner: .unclaimed) }
    func notesWithAttachments(_ query: NoteQuery) throws -> NotePage { try notesWithAttachments(query, owner: .unclaimed) }
}
