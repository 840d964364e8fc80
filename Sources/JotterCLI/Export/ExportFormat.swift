import Foundation
import JotterAPI

/// The `manifest.json` of an export archive (`jotter-export/manifest.json`, its first member).
///
/// ```
/// jotter-export/manifest.json
/// jotter-export/notes/12.json              the note as the API shows it (one in the trash: with deleted_at)
/// jotter-export/notes/12.md                its body, YAML front matter first
/// jotter-export/notes/12.revisions.json    its kept versions, oldest first, with their bodies
/// jotter-export/notes/12/<id>-photo.png    its attachments, beside it
/// jotter-export/uploads/<id>-report.pdf    uploads attached to no note
/// ```
struct ExportManifest: Codable {
    static let format = "jotter-export"
    /// 2: notes in the trash too (`NoteEntry.deletedAt`); a jotter that reads only 1 would
    /// bring them back as live notes, so it refuses the archive.
    static let formatVersion = 2
    static let folder = "jotter-export"
    static let path = folder + "/manifest.json"

    var format = ExportManifest.format
    var formatVersion = ExportManifest.formatVersion
    var jotterVersion = JotterBuild.version
    /// UTC, `yyyy-MM-dd HH:mm:ss`.
    var exportedAt: String
    /// The server the notes came from.
    var server: String
    var notes: [NoteEntry]
    /// Uploads attached to no note.
    var uploads: [FileEntry]
    /// Every other member of the archive, with its size and SHA-256.
    var files: [MemberEntry]

    struct NoteEntry: Codable {
        var id: String
        var version: Int
        var createdAt: String
        var updatedAt: String
        /// `notes/<id>.json` and `notes/<id>.md`, inside `jotter-export/`.
        var json: String
        var markdown: String
        var attachments: [FileEntry]
        /// `notes/<id>.revisions.json`: its revisions (`[Revision]`, oldest first); absent in
        /// archives from before revisions.
        var revisions: String?
        /// UTC, `yyyy-MM-dd HH:mm:ss`: when the note was deleted, for a note in the trash
        /// (imported into the trash); absent for a live note.
        var deletedAt: String? = nil
    }

    struct FileEntry: Codable, Hashable {
        var id: String
        var filename: String
        var contentType: String
        var size: Int64
        var sha256: String
        var path: String
    }

    struct MemberEntry: Codable {
        var path: String
        var size: Int64
        var sha256: String
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }()
}

/// How notes and files are written into an export.
enum ExportLayout {
    /// The note as a Markdown file: YAML front matter (id, times, version, when it was deleted
    /// for a note in the trash, attachments), then
    /// the body exactly as stored.
    static func markdown(_ note: Note, deletedAt: Date? = nil, attachments: [ExportManifest.FileEntry]) -> String {
        var text =
            "---\nid: \(quoted(note.id))\ncreated_at: \(quoted(Timestamp.format(note.createdAt)))\nupdated_at: \(quoted(Timestamp.format(note.updatedAt)))\nversion: \(note.version)\n"
        if let deletedAt { text += "deleted_at: \(quoted(Timestamp.format(deletedAt)))\n" }
        if !attachments.isEmpty {
            text += "attachments:\n"
            for file in attachments { text += "  - \(quoted(String(file.path.dropFirst("notes/".count))))\n" }
        }
        return text + "---\n" + note.body
    }

    /// A YAML double-quoted string.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\\x" + (scalar.value < 16 ? "0" : "") + String(scalar.value, radix: 16)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// `<id>-<name>`: the upload's file name made safe as one path segment, kept readable.
    static func fileName(_ upload: Upload) -> String {
        var name = String(
            upload.filename.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }
                .map { $0 == "/" || $0 == "\\" ? "_" : Character($0) })
        while name.utf8.count > 200 { name.removeFirst() }
        return upload.id + "-" + (name.isEmpty || name == "." || name == ".." ? "upload" : name)
    }

    static func entry(_ upload: Upload, path: String) -> ExportManifest.FileEntry {
        ExportManifest.FileEntry(
            id: upload.id, filename: upload.filename, contentType: upload.contentType, size: upload.size,
            sha256: upload.sha256, path: path)
    }
}
