import Foundation
import Testing
import JotterAPI
import JotterHTTP
@testable import JotterServer
import JotterStore

/// The hand-written JSON of the wire types must be exactly what `JSONEncoder` writes.
@Suite("Wire JSON")
struct WireJSONTests {
    static let hostile = "quote \" backslash \\ slash / newline \n tab \t return \r bell \u{7} nul \u{0} del \u{7F} é 日本 📝 \u{2028}"

    static let upload = Upload(
        id: "0123456789abcdef01234567", filename: hostile, contentType: "text/plain", size: 1 << 40,
        sha256: String(repeating: "a", count: 64), createdAt: Timestamp.date("2026-11-30 14:35:40")!, noteID: nil, url: "/uploads/x/content")

    func both<T: Encodable & JSONWritable>(_ value: T) throws -> (String, String) {
        var json = JSONWriter()
        value.write(to: &json)
        return (String(decoding: json.bytes, as: UTF8.self), String(decoding: try JSONCoding.encoder.encode(value), as: UTF8.self))
    }

    @Test func notesUploadsAndEnvelopesMatchJSONEncoder() throws {
        var attached = Self.upload
        attached.noteID = "42"
        let note = Note(
            id: "42", body: Self.hostile, createdAt: Timestamp.date("2026-11-30 14:35:40")!, updatedAt: Timestamp.date("2026-11-30 14:35:41")!,
            version: 7, attachments: [Self.upload, attached])
        let empty = Note(
            id: "1", body: "", createdAt: Timestamp.date("1970-01-01 00:00:00")!, updatedAt: Timestamp.date("1970-01-01 00:00:00")!, version: 1)
        let pairs = [
            try both(Self.upload), try both(note), try both(empty),
            try both(NoteEnvelope(note: note, message: "Note Created")), try both(NoteEnvelope(note: empty)),
            try both(NoteList([note, empty], next: "/notes?limit=2&after=1")), try both(NoteList([], next: nil)),
            try both(UploadList(uploads: [Self.upload])), try both(UploadEnvelope(upload: attached)),
            try both(UploadPage([Self.upload, attached], next: "/uploads?limit=2&after=x")), try both(UploadPage([], next: nil)),
        ]
        for (ours, foundation) in pairs {
            #expect(ours == foundation)
        }
    }

    /// Notes written straight from their records are the `Note`s JSONEncoder writes.
    @Test func storedNotesMatchTheirWireForm() throws {
        let attachment = UploadRecord(
            id: "0123456789abcdef01234567", filename: Self.hostile, contentType: "text/plain", size: 5,
            sha256: String(repeating: "b", count: 64), createdAt: 1_796_049_340, noteID: 42)
        let records = [
            NoteRecord(id: 42, body: Self.hostile, createdAt: 1_796_049_340, updatedAt: 1_796_049_341, version: 7),
            NoteRecord(id: 1, body: "", createdAt: 0, updatedAt: 59, version: 1),
            NoteRecord(id: 9_007_199_254_740_993, body: "x", createdAt: -1, updatedAt: 253_402_300_799, version: 1 << 40),
            NoteRecord(id: 7, body: "plain text", createdAt: 951_782_400, updatedAt: 4_107_542_399, version: 10),
            // Times on the day of the first note's (a page formats that day's date once).
            NoteRecord(id: 6, body: "same day", createdAt: 1_796_049_340 + 3_661, updatedAt: 1_796_025_600, version: 2),
            NoteRecord(id: 5, body: "day before", createdAt: 1_796_025_599, updatedAt: 1_796_025_600 + 86_399, version: 3),
        ]
        let stored = records.enumerated().map { StoredNote(record: $1, attachments: $0 == 0 ? [attachment, attachment] : []) }
        let pairs =
            try stored.map { try both($0) } + [
                try both(StoredNoteEnvelope(note: stored[0], message: "Note Created")), try both(StoredNoteEnvelope(note: stored[1])),
                try both(StoredNoteList(page: NotePage(records, attachments: [42: [attachment, attachment]]), next: "/notes?limit=4&after=7")),
                try both(StoredNoteList(page: NotePage(records), count: 2, next: nil)), try both(StoredNoteList(page: NotePage([]), next: nil)),
            ]
        for (ours, foundation) in pairs {
            #expect(ours == foundation)
        }
        for note in stored {
            var json = JSONWriter()
            note.note.write(to: &json)
            var direct = JSONWriter()
            note.write(to: &direct)
            #expect(direct.bytes == json.bytes)
            #expect(note.etag == note.note.etag)
        }
    }
}
