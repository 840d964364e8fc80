import JotterAPI
import JotterHTTP

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
