import JotterCLICore
import Foundation
import Glibc
import JotterAPI
import JotterClient
import JotterSystem

/// `jotter import FILE`: the notes and files of an export archive into a server, idempotently.
struct ImportCommand: AsyncCommand, ParsableArguments {
    static let name = "import"
    static let summary = "Import an export archive; what is already there is skipped."
    static let about = """
        Reads an archive written by jotter export, checks every file in it against the size and
        SHA-256 in its manifest (nothing is written when one fails), then creates on the server
        each note that is not there yet, oldest first, with its attachments, and each upload
        attached to no note. A note of the archive's trash goes, once created with its history
        and attachments, to the server's trash (its deleted_at is then the import's time). A
        note counts as there when the server has one with the same body and the same
        attachments (file name and SHA-256) — in its trash, for a note of the archive's trash; a
        note found live with only some of its attachments, or live when the archive has it in
        the trash (an import cut short), gets the rest and goes to the trash. So importing twice
        creates nothing new. The server gives the notes new ids and times. On a terminal a
        progress bar shows the bytes.
        """

    @Group var options: ClientOptions
    /// The archive's path.
    @Operand(.single("FILE")) var operands: String

    /// What identifies an attachment across servers.
    struct FileKey: Hashable {
        var filename: String
        var sha256: String
    }

    func run(console: Console) async throws -> Int32 {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-import-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let archive = try ExtractedArchive(path: operands, into: scratch.path)
        let manifest = archive.manifest

        let client = options.client()
        var existing = Found(), trash = Found()
        for try await note in client.notes.all(pageSize: 1000) { existing.add(note) }
        for deleted in try await client.notes.allTrash() { trash.add(deleted.note) }
        var loose: [FileKey: Int] = [:]
        for upload in try await client.uploads.all(attachment: .unattached) {
            loose[FileKey(filename: upload.filename, sha256: upload.sha256), default: 0] += 1
        }

        let total = manifest.files.reduce(0) { $0 + $1.size }
        let bar = ProgressBar(label: "import", console: console)
        var done: Int64 = 0
        var created = 0, completed = 0, skipped = 0, files = 0, trashed = 0
        do {
            defer { bar.finish() }
            for entry in manifest.notes {
                let note = try archive.note(entry)
                let wanted = entry.attachments.map { FileKey(filename: $0.filename, sha256: $0.sha256) }.sorted(by: Self.order)
                let size = Int64(note.body.utf8.count) + entry.attachments.reduce(0) { $0 + $1.size }
                let deleted = entry.deletedAt != nil
                var missing = entry.attachments
                var target: String?
                if deleted, trash.take(body: note.body, where: { $0.sorted(by: Self.order) == wanted }) != nil {
                    skipped += 1
                    missing = []
                } else if let found = existing.take(body: note.body, where: { $0.sorted(by: Self.order) == wanted }) {
                    missing = []
                    if deleted {
                        // Created, but cut short before it went to the trash.
                        target = found.id
                        completed += 1
                    } else {
                        skipped += 1
                    }
                } else if let found = existing.take(body: note.body, where: { Self.isPart($0, of: wanted) }) {
                    // Cut short before: add what that note lacks.
                    var have = found.files
                    missing = entry.attachments.filter { file in
                        let key = FileKey(filename: file.filename, sha256: file.sha256)
                        guard let found = have.firstIndex(of: key) else { return true }
                        have.remove(at: found)
                        return false
                    }
                    target = found.id
                    completed += 1
                } else {
                    // Its history replayed, oldest first, so the new note has its revisions (as new versions, of today).
                    let bodies = try archive.history(entry, ending: note.body)
                    let id = try await client.notes.create(bodies[0]).id
                    for body in bodies.dropFirst() { _ = try await client.notes.update(id, body: body) }
                    target = id
                    created += 1
                }
                for file in missing {
                    _ = try await client.uploads.upload(
                        fileAt: URL(fileURLWithPath: try archive.file(file.path)), noteID: target,
                        filename: file.filename, contentType: file.contentType)
                    files += 1
                }
                if deleted, let target {
                    // Into the trash, with its history and attachments, once it has them all.
                    _ = try await client.notes.delete(target)
                    trashed += 1
                }
                done += size
                bar.update(completed: done, total: total)
            }
            for file in manifest.uploads {
                let key = FileKey(filename: file.filename, sha256: file.sha256)
                if let count = loose[key], count > 0 {
                    loose[key] = count - 1
                    skipped += 1
                } else {
                    _ = try await client.uploads.upload(
                        fileAt: URL(fileURLWithPath: try archive.file(file.path)),
                        filename: file.filename, contentType: file.contentType)
                    files += 1
                }
                done += file.size
                bar.update(completed: done, total: total)
            }
        }
        if options.json {
            console.out(
                try ClientOptions.json([
                    "created_notes": created, "completed_notes": completed, "trashed_notes": trashed,
                    "uploaded_files": files, "already_there": skipped,
                ]))
        } else {
            let finished = completed > 0 ? ", completed \(completed)" : ""
            let trash = trashed > 0 ? ", \(trashed) put in the trash" : ""
            console.out(
                "imported \(TextFormat.count(created, "note")) and \(TextFormat.count(files, "file")) from \(operands)\(finished)\(trash) (\(skipped) already there)\n"
            )
        }
        return ExitCode.success
    }

    /// The server's notes (live, or in its trash) by body, each with its attachments: what
    /// the archive's notes are matched against, each found note at most once.
    struct Found {
        private var byBody: [String: [(id: String, files: [FileKey])]] = [:]

        mutating func add(_ note: Note) {
            byBody[note.body, default: []].append((note.id, note.attachments.map { FileKey(filename: $0.filename, sha256: $0.sha256) }))
        }

        /// The first note with `body` whose attachments `match`, no longer found after this.
        mutating func take(body: String, where match: ([FileKey]) -> Bool) -> (id: String, files: [FileKey])? {
            guard let index = byBody[body]?.firstIndex(where: { match($0.files) }) else { return nil }
            return byBody[body]!.remove(at: index)
        }
    }

    static func order(_ a: FileKey, _ b: FileKey) -> Bool { (a.sha256, a.filename) < (b.sha256, b.filename) }

    /// True when every file of `have` is among `wanted` (as many times), and some are missing.
    static func isPart(_ have: [FileKey], of wanted: [FileKey]) -> Bool {
        guard have.count < wanted.count else { return false }
        var left = wanted
        for key in have {
            guard let index = left.firstIndex(of: key) else { return false }
            left.remove(at: index)
        }
        return true
    }
}

/// An export archive unpacked into a scratch folder, every member checked against the
/// manifest before anything is used. Members are stored under numbered names: a path in the
/// archive is never a path on disk.
struct ExtractedArchive {
    let manifest: ExportManifest
    private let files: [String: String]

    init(path: String, into scratch: String) throws {
        let tar = try TarReader(path: path)
        var manifest: ExportManifest?
        var files: [String: (path: String, size: Int64, sha256: String)] = [:]
        let prefix = ExportManifest.folder + "/"
        while let member = try tar.next() {
            guard member.isFile else { continue }
            if member.name == ExportManifest.path {
                guard member.size <= 256 << 20 else { throw CommandFailure("\(path): the manifest is too large") }
                var bytes: [UInt8] = []
                try tar.read { bytes += $0 }
                do {
                    manifest = try ExportManifest.decoder.decode(ExportManifest.self, from: Data(bytes))
                } catch {
                    throw CommandFailure("\(path) is not a jotter export: its manifest can't be read (\(error))")
                }
                continue
            }
            guard member.name.hasPrefix(prefix) else { continue }
            let local = scratch + "/member-\(files.count)"
            let (size, digest) = try Self.save(tar, to: local)
            files[String(member.name.dropFirst(prefix.count))] = (local, size, digest)
        }
        guard let manifest else { throw CommandFailure("\(path) is not a jotter export: it has no \(ExportManifest.path)") }
        guard manifest.format == ExportManifest.format else { throw CommandFailure("\(path) is not a jotter export (format '\(manifest.format)')") }
        guard manifest.formatVersion <= ExportManifest.formatVersion else {
            throw CommandFailure(
                "\(path) is export format \(manifest.formatVersion), newer than this jotter reads (\(ExportManifest.formatVersion)); upgrade jotter")
        }
        for entry in manifest.files {
            guard let file = files[entry.path] else { throw CommandFailure("\(path) is damaged: \(entry.path) is missing") }
            guard file.size == entry.size, file.sha256 == entry.sha256 else {
                throw CommandFailure("\(path) is damaged: \(entry.path) does not have the size and SHA-256 of its manifest")
            }
        }
        let listed = Set(manifest.files.map(\.path))
        for entry in manifest.notes {
            for member in [entry.json, entry.markdown] + entry.attachments.map(\.path) where !listed.contains(member) {
                throw CommandFailure("\(path) is damaged: \(member) is not in its manifest's files")
            }
        }
        for entry in manifest.uploads where !listed.contains(entry.path) {
            throw CommandFailure("\(path) is damaged: \(entry.path) is not in its manifest's files")
        }
        self.manifest = manifest
        self.files = files.mapValues(\.path)
    }

    /// Where the checked member `path` (inside `jotter-export/`) is on disk.
    func file(_ path: String) throws -> String {
        guard let local = files[path] else { throw CommandFailure("the archive has no \(path)") }
        return local
    }

    /// The note of a manifest entry, from its JSON file.
    func note(_ entry: ExportManifest.NoteEntry) throws -> Note {
        do {
            return try JSONDecoder().decode(Note.self, from: Data(contentsOf: URL(fileURLWithPath: try file(entry.json))))
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure("the archive's \(entry.json) is not a note: \(error)")
        }
    }

    /// The bodies of a note's revisions, oldest first, each one that differs from the one before,
    /// ending with `body`; just `body` for an archive without revisions.
    func history(_ entry: ExportManifest.NoteEntry, ending body: String) throws -> [String] {
        var bodies: [String] = []
        if let path = entry.revisions {
            do {
                let revisions = try JSONDecoder().decode([Revision].self, from: Data(contentsOf: URL(fileURLWithPath: try file(path))))
                for revision in revisions.sorted(by: { $0.version < $1.version }) where bodies.last != revision.body {
                    bodies.append(revision.body)
                }
            } catch let failure as CommandFailure {
                throw failure
            } catch {
                throw CommandFailure("the archive's \(path) is not a list of revisions: \(error)")
            }
        }
        if bodies.last != body { bodies.append(body) }
        return bodies
    }

    /// Streams the current member to `target`, hashing it on the way.
    private static func save(_ tar: TarReader, to target: String) throws -> (Int64, String) {
        let fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CommandFailure("cannot create \(target): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var hash = SHA256()
        var size: Int64 = 0
        try tar.read { chunk in
            hash.update(chunk)
            var offset = 0
            while offset < chunk.count {
                let written = write(fd, chunk.baseAddress! + offset, chunk.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { throw CommandFailure("cannot write \(target): \(String(cString: strerror(errno)))") }
                offset += written
            }
            size += Int64(chunk.count)
        }
        return (size, hash.finish())
    }
}
