import Foundation
import Testing
import JotterAPI
import JotterHTTP
@testable import JotterServer

/// The hand-written JSON of the wire types must be exactly what `JSONEncoder` writes.
@Suite("Wire JSON")
struct WireJSONTests {
    static let hostile = "quote \" backslash \\ slash / newline \n tab \t return \r bell \u{7} nul \u{0} del \u{7F} é 日本 📝 \u{2028}"

    static let upload = Upload(id: "0123456789abcdef01234567", filename: hostile, contentType: "text/plain", size: 1 << 40,
                               sha256: String(repeating: "a", count: 64), createdAt: "2026-11-30 14:35:40", noteID: nil, url: "/uploads/x/content")

    func both<T: Encodable & JSONWritable>(_ value: T) throws -> (String, String) {
        var json = JSONWriter()
        value.write(to: &json)
        return (String(decoding: json.bytes, as: UTF8.self), String(decoding: try JSONCoding.encoder.encode(value), as: UTF8.self))
    }

    @Test func notesUploadsAndEnvelopesMatchJSONEncoder() throws {
        var attached = Self.upload
        attached.noteID = "42"
        let note = Note(id: "42", body: Self.hostile, createdAt: "2026-11-30 14:35:40", updatedAt: "2026-11-30 14:35:41",
                        version: 7, attachments: [Self.upload, attached])
        let empty = Note(id: "1", body: "", createdAt: "1970-01-01 00:00:00", updatedAt: "1970-01-01 00:00:00", version: 1)
        let pairs = [
            try both(Self.upload), try both(note), try both(empty),
            try both(NoteEnvelope(note: note, message: "Note Created")), try both(NoteEnvelope(note: empty)),
            try both(NoteList(notes: [note, empty], next: "/notes?limit=2&after=1")), try both(NoteList(notes: [], next: nil)),
            try both(UploadList(uploads: [Self.upload])), try both(UploadEnvelope(upload: attached)),
            try both(UploadPage(uploads: [Self.upload, attached], next: "/uploads?limit=2&after=x")), try both(UploadPage(uploads: [], next: nil)),
        ]
        for (ours, foundation) in pairs {
            #expect(ours == foundation)
        }
    }
}
