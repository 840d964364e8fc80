import JotterCLICore
import Foundation
import JotterAPI
import JotterClient
import Glibc
import JotterSystem

/// `jotter export FILE`: every note, as JSON and Markdown, with its attachments, into one tar.
struct ExportCommand: AsyncCommand, ParsableArguments {
    static let name = "export"
    static let summary = "Export every note and file into one archive (JSON, Markdown, attachments)."
    static let about = """
        Writes every note of the server, those in the trash included, into the tar archive FILE
        (gzip-compressed when it ends in .gz or .tgz): jotter-export/notes/<id>.json (the note
        as the API shows it, with deleted_at for one in the trash), <id>.md (YAML front matter,
        then the body exactly) and <id>.revisions.json (its history), its attachments beside
        them in notes/<id>/, uploads attached to no note in uploads/, and first of all
        manifest.json: format and jotter versions, each note's version and times (and when it
        was deleted), and the size and SHA-256 of every file. Attachments are checked against their SHA-256 as they are fetched. On a
        terminal a progress bar shows the bytes. Read it back with jotter import FILE.

        An export reads the notes page by page while the server goes on: for a snapshot of one
        moment use jotter backup.
        """

    @Group var options: ClientOptions
    @Value(Option.flag("--force", help: "Replace FILE if it exists.")) var force: Bool
    @Operand(.single("FILE")) var path: String

    func validate(_ arguments: Arguments) throws { try TarWriter.checkName(path) }

    /// The manifest's entries of `members`: bytes are hashed here, uploads carry their SHA-256.
    static func entries(_ members: [(name: String, bytes: [UInt8]?, upload: Upload?)]) -> [ExportManifest.MemberEntry] {
        var entries: [ExportManifest.MemberEntry] = []
        for member in members {
            if let bytes = member.bytes {
                entries.append(.init(path: member.name, size: Int64(bytes.count), sha256: SHA256.hex(bytes)))
            } else if let upload = member.upload {
                entries.append(.init(path: member.name, size: upload.size, sha256: upload.sha256))
            }
        }
        return entries
    }

    /// Downloads an attachment (the SDK checks its size and SHA-256).
    static func fetch(_ upload: Upload, to file: URL, client: JotterClient, progress: @escaping @Sendable (Int64) -> Void) async throws {
        do {
            try await client.uploads.download(upload.id, to: file) { progress($0.completed) }
        } catch {
            if error.isNotFound { throw CommandFailure("upload \(upload.id) was deleted during the export; run it again") }
            throw error
        }
    }

    func run(console: Console) async throws -> Int32 {
        guard force || !FileManager.default.fileExists(atPath: path) else {
            throw CommandFailure("\(path) already exists; pass --force to replace it")
        }
        let client = options.client()
        // The live notes oldest first, then the trash (each note once: one deleted meanwhile stays live here).
        var notes: [(note: Note, deletedAt: Date?)] = []
        for try await note in client.notes.all(pageSize: 1000, order: .oldestFirst) { notes.append((note, nil)) }
        let live = Set(notes.map(\.note.id))
        for deleted in try await client.notes.allTrash().reversed() where !live.contains(deleted.id) {
            notes.append((deleted.note, deleted.deletedAt))
        }
        // Every page of them, oldest first.
        let unattached = Array(try await client.uploads.all(attachment: .unattached).reversed())

        // The manifest first: every size and SHA-256 is known before a byte is fetched.
        var members: [(name: String, bytes: [UInt8]?, upload: Upload?)] = []
        var manifest = ExportManifest(
            exportedAt: Timestamp.format(Int64(Date().timeIntervalSince1970)), server: options.server.absoluteString,
            notes: [], uploads: [], files: [])
        for (note, deletedAt) in notes {
            let attachments = note.attachments.map { ExportLayout.entry($0, path: "notes/\(note.id)/" + ExportLayout.fileName($0)) }
            let text = try deletedAt.map { try ClientOptions.json(DeletedNote(note: note, deletedAt: $0)) } ?? ClientOptions.json(note)
            let json = Array(text.utf8)
            let markdown = Array(ExportLayout.markdown(note, deletedAt: deletedAt, attachments: attachments).utf8)
            // Its history, oldest first, each version with its body.
            var revisions: [Revision] = []
            let inTrash = deletedAt != nil
            for info in try await client.notes.allRevisions(note.id, inTrash: inTrash).reversed() {
                revisions.append(try await client.notes.revision(note.id, version: info.version, inTrash: inTrash))
            }
            manifest.notes.append(
                .init(
                    id: note.id, version: note.version, createdAt: Timestamp.format(note.createdAt), updatedAt: Timestamp.format(note.updatedAt),
                    json: "notes/\(note.id).json", markdown: "notes/\(note.id).md", attachments: attachments,
                    revisions: "notes/\(note.id).revisions.json",
                    deletedAt: deletedAt.map { Timestamp.format($0) }))
            members.append(("notes/\(note.id).json", json, nil))
            members.append(("notes/\(note.id).md", markdown, nil))
            members.append(("notes/\(note.id).revisions.json", Array(try ClientOptions.json(revisions).utf8), nil))
            for (upload, entry) in zip(note.attachments, attachments) { members.append((entry.path, nil, upload)) }
        }
        for upload in unattached {
            let entry = ExportLayout.entry(upload, path: "uploads/" + ExportLayout.fileName(upload))
            manifest.uploads.append(entry)
            members.append((entry.path, nil, upload))
        }
        manifest.files = Self.entries(members)

        let partial = path + ".partial"
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-export-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(atPath: partial)
            try? FileManager.default.removeItem(at: scratch)
        }
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let now = Int64(Date().timeIntervalSince1970)
        // Compressed as the final name says, not the temporary one.
        let tar = try TarWriter(path: partial, gzip: TarWriter.isGzip(path))
        try tar.add(ExportManifest.path, bytes: Array(try ExportManifest.encoder.encode(manifest)) + [0x0A], modified: now)
        let total = manifest.files.reduce(0) { $0 + $1.size }
        let bar = ProgressBar(label: "export", console: console)
        var done: Int64 = 0
        do {
            defer { bar.finish() }
            for member in members {
                let name = ExportManifest.folder + "/" + member.name
                if let bytes = member.bytes {
                    try tar.add(name, bytes: bytes, modified: now)
                    done += Int64(bytes.count)
                } else if let upload = member.upload {
                    let file = scratch.appendingPathComponent(upload.id)
                    let before = done
                    try await Self.fetch(upload, to: file, client: client) { bar.update(completed: before + $0, total: total) }
                    try tar.add(name, file: file.path, size: upload.size, modified: now)
                    try? FileManager.default.removeItem(at: file)
                    done += upload.size
                }
                bar.update(completed: done, total: total)
            }
            try tar.finish()
        }
        guard rename(partial, path) == 0 else { throw CommandFailure("cannot move the archive to \(path): \(String(cString: strerror(errno)))") }
        let files = manifest.notes.reduce(manifest.uploads.count) { $0 + $1.attachments.count }
        let trashed = manifest.notes.count { $0.deletedAt != nil }
        if options.json {
            struct Summary: Encodable { var path: String, notes: Int, trashed: Int, files: Int, bytes: Int64 }
            console.out(try ClientOptions.json(Summary(path: path, notes: manifest.notes.count, trashed: trashed, files: files, bytes: total)))
        } else {
            let trash = trashed > 0 ? " (\(trashed) in the trash)" : ""
            console.out(
                "exported \(TextFormat.count(manifest.notes.count, "note"))\(trash) and \(TextFormat.count(files, "file")) (\(TextFormat.bytes(total))) to \(path)\n"
            )
        }
        return ExitCode.success
    }
}
