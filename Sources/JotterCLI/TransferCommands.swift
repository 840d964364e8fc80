import JotterCLICore
import Foundation
import JotterAPI
import JotterClient
import Synchronization

/// `jotter upload PATH… [--note ID]`: stores files on the server, streamed from disk.
struct UploadCommand: AsyncCommand, ParsableArguments {
    static let name = "upload"
    static let summary = "Upload files, optionally attached to a note."
    static let about = """
        Uploads each file in turn, streamed from disk, after checking that every PATH is a
        readable file. On a terminal a progress bar shows the rate and the time left; then one
        line per file: its upload id, size and rate. A file over the server's limit is refused
        before its bytes are sent (exit 6).

        With --resume each file goes as a resumable upload (tus 1.0, in 8 MiB chunks) whose state
        is kept in $XDG_STATE_HOME/jotter/uploads (default ~/.local/state/jotter/uploads): run the
        same command again after an interruption and only the rest is sent ("resumed at N bytes";
        the progress bar counts the bytes already on the server).
        """

    @Group var options: ClientOptions
    @Value(Option.text("--note", value: "ID", help: "Attach the files to this note.")) var note: String?
    @Value(Option.flag("--resume", help: "Resumable: an interrupted upload goes on from where it stopped when run again.")) var resume: Bool
    @Operand(.some("PATH")) var paths: [String]
    private(set) var environment: [String: String] = [:]

    mutating func validate(_ arguments: Arguments) throws { environment = arguments.environment }

    /// Where `--resume` keeps the state of `path`'s upload.
    static func stateFile(for path: String, environment: [String: String]) throws -> URL {
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) } ?? FileManager.default.homeDirectoryForCurrentUser
        let base =
            environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? home.appendingPathComponent(".local/state")
        let folder = base.appendingPathComponent("jotter/uploads")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // FNV-1a of the absolute path: one state file per file.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in URL(fileURLWithPath: path).standardizedFileURL.path.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return folder.appendingPathComponent(String(hash, radix: 16) + ".json")
    }

    func run(console: Console) async throws -> Int32 {
        if resume { return try await runResumable(console: console) }
        // Every file is checked before the first is sent.
        var forms: [(path: String, item: MultipartFormData)] = []
        for path in paths {
            var form = MultipartFormData()
            if let note { form.append(note, name: "note_id") }
            do {
                try form.append(fileAt: URL(fileURLWithPath: path), name: "file")
            } catch {
                throw CommandFailure("\(error.message); nothing was uploaded")
            }
            forms.append((path, form))
        }
        let client = options.client()
        return try await sendEach(forms, console: console) { path, form, bar in
            guard let upload = try await client.uploads.upload(form, progress: { bar.update(completed: $0.completed, total: $0.total) }).first else {
                throw CommandFailure("the server stored nothing for \(path)")
            }
            return (upload, 0)
        }
    }

    /// Sends each file in turn with `send`, under a progress bar labelled with its name, and
    /// says what was stored: a line a file (its id, size and rate; where it resumed), or with
    /// `--json` the list of them. `send` gives the upload and how many of its bytes were on the
    /// server already.
    private func sendEach<Item>(
        _ files: [(path: String, item: Item)], console: Console,
        send: (String, Item, ProgressBar) async throws -> (upload: Upload, resumedAt: Int64)
    ) async throws -> Int32 {
        var uploads: [Upload] = []
        for (path, item) in files {
            let bar = ProgressBar(label: URL(fileURLWithPath: path).lastPathComponent, console: console)
            let sent: (upload: Upload, resumedAt: Int64)
            do {
                defer { bar.finish() }
                sent = try await send(path, item, bar)
            }
            let upload = sent.upload
            uploads.append(upload)
            if !options.json {
                console.out(
                    "uploaded \(path) as \(upload.id)  \(TextFormat.bytes(upload.size))"
                        + (sent.resumedAt > 0 ? "  resumed at \(sent.resumedAt) bytes" : "")
                        + "  in \(TextFormat.oneDecimal(bar.elapsed)) s (\(TextFormat.rate(Double(upload.size - sent.resumedAt) / max(bar.elapsed, 0.001))))\n"
                )
            }
        }
        if options.json { console.out(try ClientOptions.json(UploadList(uploads: uploads))) }
        return ExitCode.success
    }
}

extension UploadCommand {
    /// `--resume`: each file as a resumable upload, its state in a file.
    func runResumable(console: Console) async throws -> Int32 {
        for path in paths where !FileManager.default.isReadableFile(atPath: path) {
            throw CommandFailure("cannot read \(path); nothing was uploaded")
        }
        let client = options.client()
        return try await sendEach(paths.map { ($0, ()) }, console: console) { path, _, bar in
            let start = Atomic<Int64>(0)
            let upload = try await client.uploads.resumableUpload(
                fileAt: URL(fileURLWithPath: path), state: try Self.stateFile(for: path, environment: environment), noteID: note,
                progress: { bar.update(completed: $0.completed, total: $0.total) },
                resumed: { start.store($0, ordering: .relaxed) })
            return (upload, start.load(ordering: .relaxed))
        }
    }
}

/// `jotter download ID [-o PATH|-] [--force]`: fetches an upload, checked against its SHA-256.
struct DownloadCommand: AsyncCommand, ParsableArguments {
    static let name = "download"
    static let summary = "Download an upload (resumes an interrupted download)."
    static let about = """
        Saves the upload's content to PATH (default: its file name, in this folder; a PATH that is
        a folder gets it under its file name), or writes it to standard output with -o -. The bytes are checked against the upload's SHA-256 before
        the file takes its name; an interrupted download is resumed from where it stopped. A
        different file already at PATH is left untouched unless --force; one that already is
        this upload is not fetched again.
        """

    @Group var options: ClientOptions
    @Value(Option.text("-o", "--output", value: "PATH|-", help: "Where to save it; - for standard output.")) var output: String?
    @Value(Option.flag("--force", help: "Replace a different file already at PATH.")) var force: Bool
    @Operand(.single("ID")) var id: String

    /// The `--json` summary.
    struct Summary: Encodable {
        var path: String
        var size: Int64
        var resumedFrom: Int64
        var alreadyComplete: Bool

        enum CodingKeys: String, CodingKey {
            case path, size, resumedFrom = "resumed_from", alreadyComplete = "already_complete"
        }
    }

    func run(console: Console) async throws -> Int32 {
        let client = options.client()
        let id = try await UploadID.resolve(self.id, client: client)
        if output == "-" {
            try await client.uploads.download(id) { console.outBytes(Array($0)) }
            return ExitCode.success
        }
        let upload = try await client.uploads.get(id)
        var path = output ?? Self.safeName(upload.filename)
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
            path = URL(fileURLWithPath: path).appendingPathComponent(Self.safeName(upload.filename)).path  // into the folder, as cp does
        }
        let bar = ProgressBar(label: path, console: console)
        let start = Mutex<Int64?>(nil)  // the first report: what an earlier attempt left
        let result: DownloadResult
        do {
            result = try await client.uploads.download(id, to: URL(fileURLWithPath: path), replacing: force) { progress in
                let offset = start.withLock { first in
                    first
                        ?? {
                            first = progress.completed; return progress.completed
                        }()
                }
                bar.update(completed: progress.completed, total: progress.total, startedAt: offset)
            }
        } catch let error where error.kind == .destinationExists {
            bar.finish()
            throw CommandFailure("\(error.message) (--force replaces it, -o another path)")
        } catch {
            bar.finish()
            throw error
        }
        bar.finish()
        if options.json {
            console.out(
                try ClientOptions.json(
                    Summary(
                        path: path, size: result.size, resumedFrom: result.resumedFrom,
                        alreadyComplete: result.alreadyComplete)))
        } else if result.alreadyComplete {
            console.out("\(path) already is \(upload.id) (same SHA-256): nothing to download\n")
        } else {
            let resumed = result.resumedFrom > 0 ? " (resumed after \(TextFormat.bytes(result.resumedFrom)))" : ""
            console.out("downloaded \(upload.id) to \(path)  \(TextFormat.bytes(result.size))\(resumed), SHA-256 checked\n")
        }
        return ExitCode.success
    }

    /// The server's file name, usable as a file in this folder.
    static func safeName(_ filename: String) -> String {
        let last = filename.split(separator: "/").last.map(String.init) ?? ""
        return last.isEmpty || last == "." || last == ".." ? "download" : last
    }
}
