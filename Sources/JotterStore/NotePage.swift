/// A page of notes as the store read it, with their attachments: every body's bytes in one
/// buffer beside the other columns — no `String` and no allocation per note — so the page can
/// be written into a response straight from the rows.
///
/// ```swift
/// let page = try store.notesWithAttachments(NoteQuery(limit: 100), owner: owner)
/// for index in page.indices {
///     let note = page[index]                       // id, times, version
///     page.withBody(at: index) { utf8 in … }       // the body's UTF-8 bytes, borrowed
///     let uploads = page.attachments(of: note.id)
/// }
/// ```
public struct NotePage: Sendable {
    /// A note of the page without its body (`NotePage.withBody(at:_:)`, `record(at:)`).
    public struct Note: Sendable, Hashable {
        public var id: Int64
        /// Unix seconds, UTC.
        public var createdAt: Int64
        public var updatedAt: Int64
        public var version: Int64
        /// The listing's cursor after this note (`NoteQuery.after`): its id, or with
        /// `.recentlyUpdated` the event id of its latest change.
        public var position: Int64
        /// Where the body is in the page's bytes, and how long it is (UTF-8 bytes).
        @usableFromInline var bodyOffset: Int
        public var bodyCount: Int
    }

    public private(set) var notes: [Note] = []
    @usableFromInline var bodies: NotePageBytes
    /// The attachments of the page's notes by note id, oldest first; notes without any are absent.
    public internal(set) var attachmentsByNote: [Int64: [UploadRecord]] = [:]

    /// An empty page with room for about `capacity` notes.
    init(capacity: Int = 0) {
        let capacity = min(max(capacity, 1), 1024)  // a guess: pages are at most 1,001 notes, most of them short
        notes.reserveCapacity(capacity)
        bodies = NotePageBytes(capacity: 128 * capacity)
    }

    /// A page of the notes of `records`, with `attachments` (tests, and stores that read records).
    public init(_ records: [NoteRecord], attachments: [Int64: [UploadRecord]] = [:]) {
        self.init(capacity: records.count)
        for record in records {
            var body = record.body
            body.withUTF8 {
                append(
                    id: record.id, body: UnsafeRawBufferPointer($0), createdAt: record.createdAt,
                    updatedAt: record.updatedAt, version: record.version)
            }
        }
        attachmentsByNote = attachments
    }

    public var count: Int { notes.count }
    public var isEmpty: Bool { notes.isEmpty }
    public var indices: Range<Int> { notes.indices }

    @inlinable
    public subscript(index: Int) -> Note { notes[index] }

    /// Lends the UTF-8 bytes of note `index`'s body to `body` (valid only during the call).
    @inlinable
    public func withBody<Result>(at index: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        let note = notes[index]
        return try body(UnsafeRawBufferPointer(start: bodies.base + note.bodyOffset, count: note.bodyCount))
    }

    /// Note `index`'s attachments, oldest first.
    @inlinable
    public func attachments(at index: Int) -> [UploadRecord] {
        attachmentsByNote.isEmpty ? [] : attachmentsByNote[notes[index].id] ?? []
    }

    /// Note `index` as a record (its body a `String`, as `NoteStore.notes` returns it).
    public func record(at index: Int) -> NoteRecord {
        let note = notes[index]
        return NoteRecord(
            id: note.id, body: withBody(at: index) { String(decoding: $0, as: UTF8.self) },
            createdAt: note.createdAt, updatedAt: note.updatedAt, version: note.version)
    }

    /// Every note as a record.
    public var records: [NoteRecord] { indices.map(record(at:)) }

    /// Adds a note, its body copied (the stores, while they read the rows).
    mutating func append(id: Int64, body: UnsafeRawBufferPointer, createdAt: Int64, updatedAt: Int64, version: Int64, position: Int64? = nil) {
        let offset = bodies.append(body)
        notes.append(
            Note(
                id: id, createdAt: createdAt, updatedAt: updatedAt, version: version, position: position ?? id,
                bodyOffset: offset, bodyCount: body.count))
    }
}

/// The bodies of a page, one after the other: written only while the store builds the page
/// (before anyone else sees it), read only after.
@usableFromInline
final class NotePageBytes: @unchecked Sendable {
    @usableFromInline private(set) var base: UnsafeMutableRawPointer
    private var count = 0
    private var capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        base = .allocate(byteCount: self.capacity, alignment: 8)
    }

    deinit { base.deallocate() }

    /// Copies `bytes` at the end; their offset.
    func append(_ bytes: UnsafeRawBufferPointer) -> Int {
        let offset = count
        if capacity - count < bytes.count {
            let larger = max(capacity * 2, count + bytes.count)
            let moved = UnsafeMutableRawPointer.allocate(byteCount: larger, alignment: 8)
            moved.copyMemory(from: base, byteCount: count)
            base.deallocate()
            base = moved
            capacity = larger
        }
        if let source = bytes.baseAddress, !bytes.isEmpty { (base + count).copyMemory(from: source, byteCount: bytes.count) }
        count += bytes.count
        return offset
    }
}
