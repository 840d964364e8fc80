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
            json.field("created_at") { $0.string(Timestamp.format(createdAt)) }
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
            json.field("created_at") { $0.string(Timestamp.format(createdAt)) }
            json.field("id") { $0.string(id) }
            json.field("updated_at") { $0.string(Timestamp.format(updatedAt)) }
            json.field("version") { $0.integer(Int64(version)) }
        }
    }
}

extension NoteEnvelope: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.object { json in
            if let merge { json.field("merge") { merge.write(to: &$0) } }
            if let message { json.field("message") { $0.string(message) } }
            json.field("note") { note.write(to: &$0) }
        }
    }
}

extension MergeReport {
    /// `{"base":2,"regions":[{"end":9,"start":4}],"result":"overlap"}`, keys sorted as JSONCoding's.
    func write(to json: inout JSONWriter) {
        json.object { json in
            json.field("base") { $0.integer(Int64(base)) }
            json.field("regions") { json in
                json.array(regions) { json, region in
                    json.object { json in
                        json.field("end") { $0.integer(Int64(region.end)) }
                        json.field("start") { $0.integer(Int64(region.start)) }
                    }
                }
            }
            json.field("result") { $0.string(result) }
        }
    }
}

extension Note {
    /// The fixed part of a note's JSON (keys, id, timestamps, version) and of each attachment's.
    public var estimatedJSONSize: Int { 160 + body.utf8.count + attachments.count * 260 }
}

extension NoteEnvelope {
    public var estimatedJSONSize: Int { 64 + note.estimatedJSONSize + (merge.map { 64 + 32 * $0.regions.count } ?? 0) }
}

extension Page: JSONWritable where Item: JSONWritable {
    public var estimatedJSONSize: Int { items.reduce(64) { $0 + $1.estimatedJSONSize } }

    public func write(to json: inout JSONWriter) {
        json.page(next: next, Item.pageKey, items)
    }
}

extension UploadList: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.object { json in json.field("uploads") { $0.array(uploads) { json, upload in upload.write(to: &json) } } }
    }
}

extension UploadEnvelope: JSONWritable {
    public func write(to json: inout JSONWriter) {
        json.object { json in json.field("upload") { upload.write(to: &$0) } }
    }
}

// MARK: - Stored notes, written straight from their records

/// A note's JSON from its parts — a page's row or a record — written byte for byte as
/// `Note(record, attachments:)` is (`WireJSONTests` checks): keys and punctuation as fixed
/// pieces, the body escaped from its bytes, the id, version and timestamps formatted in place.
enum NoteJSON {
    /// `mergeBase` (events only): the `base` of a merged write.
    static func write(
        id: Int64, body: UnsafeRawBufferPointer, createdAt: Int64, updatedAt: Int64, version: Int64,
        attachments: [UploadRecord], deletedAt: Int64? = nil, mergeBase: Int64? = nil, to json: inout JSONWriter
    ) {
        var timestamps = QuotedTimestamps()
        write(
            id: id, body: body, createdAt: createdAt, updatedAt: updatedAt, version: version, attachments: attachments,
            deletedAt: deletedAt, mergeBase: mergeBase, timestamps: &timestamps, to: &json)
    }

    /// The same, its timestamps from `timestamps` (shared by the notes of a page).
    static func write(
        id: Int64, body: UnsafeRawBufferPointer, createdAt: Int64, updatedAt: Int64, version: Int64,
        attachments: [UploadRecord], deletedAt: Int64? = nil, mergeBase: Int64? = nil, timestamps: inout QuotedTimestamps,
        to json: inout JSONWriter
    ) {
        if attachments.isEmpty {
            json.raw("{\"attachments\":[]")
        } else {
            json.raw("{\"attachments\":[")
            for (index, upload) in attachments.enumerated() {
                if index > 0 { json.raw(",") }
                Upload(upload).write(to: &json)
            }
            json.raw("]")
        }
        if let mergeBase {
            json.raw(",\"base\":")
            json.integer(mergeBase)
        }
        json.raw(",\"body\":")
        json.string(utf8: body)
        json.raw(",\"created_at\":")
        let created = timestamps.quoted(createdAt)
        json.timestamp(created)
        if let deletedAt {
            json.raw(",\"deleted_at\":")
            json.timestamp(timestamps.quoted(deletedAt))
        }
        json.raw(",\"id\":")
        json.quotedInteger(id)
        json.raw(",\"updated_at\":")
        json.timestamp(updatedAt == createdAt ? created : timestamps.quoted(updatedAt))
        json.raw(",\"version\":")
        json.integer(version)
        json.raw("}")
    }

    /// About how many bytes `write` produces for a body of `bodyCount` bytes.
    static func estimatedSize(bodyCount: Int, attachments: Int) -> Int { 160 + bodyCount + attachments * 260 }
}

extension JSONWriter {
    /// One page of a listing, `{"next":…,"<key>":[…]}`: the path of the next page (`null` on
    /// the last) and the page's items (every listing's key sorts after `next`).
    mutating func page<Item: JSONWritable>(next: String?, _ key: StaticString, _ items: [Item]) {
        object { json in
            json.field("next") { $0.optionalString(next) }
            json.field(key) { $0.array(items) { json, item in item.write(to: &json) } }
        }
    }

    /// A timestamp as the API writes it (`"2026-11-30 14:35:40"`), already formatted.
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

/// Quoted timestamps for the notes of one answer: the date of the last one's day is kept, so
/// a timestamp on the same day formats only its time (a page's notes mostly share days).
struct QuotedTimestamps {
    private var day = Int64.min
    private var last = QuotedTimestamp(0)

    mutating func quoted(_ seconds: Int64) -> QuotedTimestamp {
        let day = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        guard day == self.day else {
            self.day = day
            last = QuotedTimestamp(seconds)
            return last
        }
        var stamp = last
        withUnsafeMutableBytes(of: &stamp.bytes) { buffer in
            // `"yyyy-MM-dd ` is the day's; the time is bytes 12 ..< 20.
            Timestamp.writeTime(ofDay: seconds - day * 86_400, to: UnsafeMutableRawBufferPointer(rebasing: buffer[12..<20]))
        }
        return stamp
    }
}

/// A stored note in its wire form, written from its record (`NoteJSON`) without making the
/// `Note` and its strings first.
struct StoredNote: JSONWritable, Encodable {
    var record: NoteRecord
    var attachments: [UploadRecord]
    /// In a `note.deleted` event: when the note was deleted (none of its own times say).
    var deletedAt: Int64? = nil
    /// In an event of a merged write: the version the merged edit was made from.
    var mergeBase: Int64? = nil

    /// The strong entity tag of this version, as `Note.etag`: `"3"`.
    var etag: String { "\"\(record.version)\"" }

    var note: Note { Note(record, attachments: attachments) }

    var estimatedJSONSize: Int { NoteJSON.estimatedSize(bodyCount: record.body.utf8.count, attachments: attachments.count) }

    func write(to json: inout JSONWriter) {
        var body = record.body
        body.withUTF8 { body in
            NoteJSON.write(
                id: record.id, body: UnsafeRawBufferPointer(body), createdAt: record.createdAt, updatedAt: record.updatedAt,
                version: record.version, attachments: attachments, deletedAt: deletedAt, mergeBase: mergeBase, to: &json)
        }
    }

    func encode(to encoder: any Encoder) throws { try note.encode(to: encoder) }
}

/// `NoteEnvelope` of a stored note.
struct StoredNoteEnvelope: JSONWritable, Encodable {
    var note: StoredNote
    var message: String?
    var merge: MergeReport? = nil

    var estimatedJSONSize: Int { 64 + note.estimatedJSONSize + (merge.map { 64 + 32 * $0.regions.count } ?? 0) }

    func write(to json: inout JSONWriter) {
        json.object { json in
            if let merge { json.field("merge") { merge.write(to: &$0) } }
            if let message { json.field("message") { $0.string(message) } }
            json.field("note") { note.write(to: &$0) }
        }
    }

    func encode(to encoder: any Encoder) throws { try NoteEnvelope(note: note.note, message: message, merge: merge).encode(to: encoder) }
}

/// `NoteList` of the first `count` notes of a page, written from the page's rows: no `Note`,
/// no String per note.
struct StoredNoteList: JSONWritable, Encodable {
    var page: NotePage
    var count: Int
    var next: String?

    init(page: NotePage, count: Int? = nil, next: String?) {
        self.page = page
        self.count = min(count ?? page.count, page.count)
        self.next = next
    }

    var estimatedJSONSize: Int {
        var size = 64 + (next?.utf8.count ?? 0)
        for index in 0..<count {
            size += NoteJSON.estimatedSize(bodyCount: page[index].bodyCount, attachments: page.attachments(at: index).count)
        }
        return size
    }

    func write(to json: inout JSONWriter) {
        json.raw("{\"next\":")
        json.optionalString(next)
        json.raw(",\"notes\":[")
        var timestamps = QuotedTimestamps()
        for index in 0..<count {
            if index > 0 { json.raw(",") }
            let note = page[index]
            page.withBody(at: index) { body in
                NoteJSON.write(
                    id: note.id, body: body, createdAt: note.createdAt, updatedAt: note.updatedAt, version: note.version,
                    attachments: page.attachments(at: index), timestamps: &timestamps, to: &json)
            }
        }
        json.raw("]}")
    }

    func encode(to encoder: any Encoder) throws {
        try NoteList((0..<count).map { Note(page.record(at: $0), attachments: page.attachments(at: $0)) }, next: next).encode(to: encoder)
    }
}

/// `NoteChangeList` of the first `count` entries of a feed page, written from the page's rows
/// (its `NotePage`): no `Note`, no String per note, as `StoredNoteList`.
struct StoredChangeList: JSONWritable, Encodable {
    var page: NoteFeedPage
    var count: Int
    var cursor: Int64
    var more: Bool

    var estimatedJSONSize: Int {
        var size = 96, live = 0
        for entry in page.entries.prefix(count) {
            guard !entry.deleted else { size += 64; continue }
            size += NoteJSON.estimatedSize(bodyCount: page.notes[live].bodyCount, attachments: page.notes.attachments(at: live).count)
            live += 1
        }
        return size
    }

    func write(to json: inout JSONWriter) {
        json.raw("{\"changes\":[")
        var timestamps = QuotedTimestamps()
        var live = 0  // the next live entry's note in `page.notes`
        for (index, entry) in page.entries.prefix(count).enumerated() {
            if index > 0 { json.raw(",") }
            guard !entry.deleted else {
                json.raw("{\"deleted\":true,\"id\":")
                json.quotedInteger(entry.noteID)
                json.raw(",\"version\":")
                json.integer(entry.version)
                json.raw("}")
                continue
            }
            let note = page.notes[live]
            page.notes.withBody(at: live) { body in
                NoteJSON.write(
                    id: note.id, body: body, createdAt: note.createdAt, updatedAt: note.updatedAt, version: note.version,
                    attachments: page.notes.attachments(at: live), timestamps: &timestamps, to: &json)
            }
            live += 1
        }
        json.raw("],\"cursor\":")
        json.integer(cursor)
        json.raw(more ? ",\"more\":true" : ",\"more\":false")
        json.raw(page.walk ? ",\"reset\":true}" : ",\"reset\":false}")
    }

    var list: NoteChangeList {
        var live = 0
        return NoteChangeList(
            changes: page.entries.prefix(count).map { entry in
                guard !entry.deleted else { return .deleted(id: String(entry.noteID), version: Int(entry.version)) }
                defer { live += 1 }
                return .note(Note(page.notes.record(at: live), attachments: page.notes.attachments(at: live)))
            }, cursor: cursor, more: more, reset: page.walk)
    }

    func encode(to encoder: any Encoder) throws { try list.encode(to: encoder) }
}
