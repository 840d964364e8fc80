import JotterAPI
import JotterHTTP
import JotterStore

// The wire types written with `JSONWriter` (keys sorted, as `JSONCoding.encoder` writes them):
// notes are read far more often than anything else is encoded. `WireJSONTests` checks that
// both encoders agree byte for byte.

extension Upload: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.object { json in
            json.field("content_type") { $0.string(contentType) }
            json.field("created_at") { $0.string(createdAt) }
            json.field("filename") { $0.string(filename) }
            json.field("id") { $0.string(id) }
            json.field("note_id") { $0.optionalString(noteID) }
            json.field("sha256") { $0.string(sha256) }
            json.field("size") { $0.integer(size) }
            json.field("url") { $0.string(url) }
        }
    }
}

extension Note: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.object { json in
            json.field("attachments") { $0.array(attachments) { json, upload in upload.write(to: &json) } }
            json.field("body") { $0.string(body) }
            json.field("created_at") { $0.string(createdAt) }
            json.field("id") { $0.string(id) }
            json.field("updated_at") { $0.string(updatedAt) }
            json.field("version") { $0.integer(Int64(version)) }
        }
    }
}

extension NoteEnvelope: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.object { json in
            if let message { json.field("message") { $0.string(message) } }
            json.field("note") { note.write(to: &$0) }
        }
    }
}

extension Note {
    /// The fixed part of a note's JSON (keys, id, timestamps, version) and of each attachment's.
    public var estimatedJSONSize: Int { 160 + body.utf8.count + attachments.count * 260 }
}

extension NoteEnvelope {
    public var estimatedJSONSize: Int { 64 + note.estimatedJSONSize }
}

extension NoteList: JSONWritable {
    public var estimatedJSONSize: Int { notes.reduce(64) { $0 + $1.estimatedJSONSize } }

    public func write(to json: inout JSONWriter) {
        json.object { json in
            json.field("next") { $0.optionalString(next) }
            json.field("notes") { $0.array(notes) { json, note in note.write(to: &json) } }
        }
    }
}

extension UploadList: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.object { json in json.field("uploads") { $0.array(uploads) { json, upload in upload.write(to: &json) } } }
    }
}

extension UploadPage: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.object { json in
            json.field("next") { $0.optionalString(next) }
            json.field("uploads") { $0.array(uploads) { json, upload in upload.write(to: &json) } }
        }
    }
}

extension UploadEnvelope: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.object { json in json.field("upload") { upload.write(to: &$0) } }
    }
}

// MARK: - Stored notes, written straight from their records

extension JSONWriter {
    /// A timestamp as the API writes it (`"2026-11-30 14:35:40"`), with no String made.
    mutating func timestamp(_ seconds: Int64) {
        var text = QuotedTimestamp(seconds)
        withUnsafeBytes(of: &text.bytes) { raw(UnsafeRawBufferPointer(rebasing: $0[0..<21])) }
    }

    /// The same, already formatted.
    mutating func timestamp(_ text: QuotedTimestamp) {
        var text = text
        withUnsafeBytes(of: &text.bytes) { raw(UnsafeRawBufferPointer(rebasing: $0[0..<21])) }
    }
}

/// The 21 bytes of a quoted timestamp, on the stack: a note whose two timestamps are equal (one
/// never updated) formats once.
struct QuotedTimestamp {
    var bytes: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: `"`, 19, `"`

    init(_ seconds: Int64) {
        withUnsafeMutableBytes(of: &bytes) { buffer in
            buffer[0] = UInt8(ascii: "\"")
            Timestamp.write(seconds, to: UnsafeMutableRawBufferPointer(rebasing: buffer[1..<20]))
            buffer[20] = UInt8(ascii: "\"")
        }
    }
}

/// A stored note in its wire form, written byte for byte as `Note(record, attachments:)` is
/// (`WireJSONTests` checks), without making the `Note` and its strings first: a page of notes
/// goes from the rows into the response buffer.
struct StoredNote: JSONWritable, Encodable {
    var record: NoteRecord
    var attachments: [UploadRecord]
    /// In a `note.deleted` event: when the note was deleted (none of its own times say).
    var deletedAt: Int64? = nil

    /// The strong entity tag of this version, as `Note.etag`: `"3"`.
    var etag: String { "\"\(record.version)\"" }

    var note: Note { Note(record, attachments: attachments) }

    var estimatedJSONSize: Int { 160 + record.body.utf8.count + attachments.count * 260 }

    func write(to json: inout JSONWriter) { Self.write(record, attachments, deletedAt: deletedAt, to: &json) }

    /// The note of `record` with `attachments`, from the parts (a page writes its rows as they are).
    static func write(_ record: borrowing NoteRecord, _ attachments: borrowing [UploadRecord], deletedAt: Int64? = nil, to json: inout JSONWriter) {
        json.object { json in
            json.field("attachments") { $0.array(attachments) { json, upload in Upload(upload).write(to: &json) } }
            json.field("body") { $0.string(record.body) }
            let created = QuotedTimestamp(record.createdAt)
            json.field("created_at") { $0.timestamp(created) }
            if let deletedAt { json.field("deleted_at") { $0.timestamp(deletedAt) } }
            json.field("id") { $0.quotedInteger(record.id) }
            json.field("updated_at") { record.updatedAt == record.createdAt ? $0.timestamp(created) : $0.timestamp(record.updatedAt) }
            json.field("version") { $0.integer(record.version) }
        }
    }

    func encode(to encoder: any Encoder) throws { try note.encode(to: encoder) }
}

/// `NoteEnvelope` of a stored note.
struct StoredNoteEnvelope: JSONWritable, Encodable {
    var note: StoredNote
    var message: String?

    var estimatedJSONSize: Int { 64 + note.estimatedJSONSize }

    func write(to json: inout JSONWriter) {
        json.object { json in
            if let message { json.field("message") { $0.string(message) } }
            json.field("note") { note.write(to: &$0) }
        }
    }

    func encode(to encoder: any Encoder) throws { try NoteEnvelope(note: note.note, message: message).encode(to: encoder) }
}

/// `NoteList` of stored notes: the first `count` rows of a page as the store returned them,
/// written with no `StoredNote` made per row.
struct StoredNoteList: JSONWritable, Encodable {
    var rows: [(NoteRecord, [UploadRecord])]
    var count: Int
    var next: String?

    init(rows: [(NoteRecord, [UploadRecord])], count: Int? = nil, next: String?) {
        self.rows = rows
        self.count = min(count ?? rows.count, rows.count)
        self.next = next
    }

    init(notes: [StoredNote], next: String?) {
        self.init(rows: notes.map { ($0.record, $0.attachments) }, next: next)
    }

    var estimatedJSONSize: Int {
        var size = 64
        for index in 0..<count { size += 160 + rows[index].0.body.utf8.count + rows[index].1.count * 260 }
        return size
    }

    func write(to json: inout JSONWriter) {
        json.object { json in
            json.field("next") { $0.optionalString(next) }
            json.field("notes") { json in
                json.array(0..<count) { json, index in StoredNote.write(rows[index].0, rows[index].1, to: &json) }
            }
        }
    }

    func encode(to encoder: any Encoder) throws {
        try NoteList(notes: rows[..<count].map { Note($0.0, attachments: $0.1) }, next: next).encode(to: encoder)
    }
}
