import JotterCLICore
import JotterAPI
import JotterClient

/// `jotter uploads …`: the files stored on the server.
struct UploadsCommand: CommandGroup {
    static let name = "uploads"
    static let summary = "List, show, attach and remove uploaded files."
    static let subcommands: [any Command.Type] = [
        UploadsListCommand.self, UploadsShowCommand.self, UploadsAttachCommand.self, UploadsDetachCommand.self,
        UploadsRemoveCommand.self,
    ]
    static let about = """
        Each takes --server URL (JOTTER_SERVER) and --json; see jotter uploads <subcommand> --help.
        Upload files with jotter upload, fetch them with jotter download.
        """

    /// Where an upload belongs, for people.
    static func place(_ upload: Upload) -> String {
        upload.noteID.map { "note \($0)" } ?? "no note"
    }
}

/// `jotter uploads list [--note ID | --unattached] [--limit N | --all] [--after ID]`.
struct UploadsListCommand: AsyncCommand, ParsableArguments {
    static let name = "list"
    static let summary = "List uploads, newest first."
    static let about = """
        Lists uploads newest first as a table (ID, SIZE, CREATED, NOTE, NAME). When more follow,
        it says so on standard error and how to see them; with --json the server's `next` link is
        kept.
        """

    @Group var options: ClientOptions
    @Value(
        Option.text("--note", value: "ID", help: "Only the files attached to this note."),
        Option.flag("--unattached", help: "Only the files attached to no note.").alternative(), UploadsListCommand.attached)
    var attachment: JotterClient.Uploads.Attachment
    /// `nil` with `--all`.
    @Value(
        Option.integer("--limit", default: "\(ClientOptions.defaultLimit)", in: 1...1000, help: "At most N uploads (at most 1000)."),
        Option.flag("--all", help: "Every upload, however many (following the server's pages).").alternative(), ClientOptions.count)
    var limit: Int?
    @Value(Option.text("--after", value: "ID", help: "Start after this upload id (where a previous listing stopped).")) var after: String?

    /// Which uploads `--note ID` or `--unattached` lists.
    @Sendable static func attached(note: String?, unattached: Bool) throws -> JotterClient.Uploads.Attachment {
        if note != nil && unattached { throw UsageError("choose --note ID or --unattached, not both") }
        return note.map { .note($0) } ?? (unattached ? .unattached : .any)
    }

    func run(console: Console) async throws -> Int32 {
        let uploads = options.client().uploads
        var page = try await uploads.page(limit: limit ?? 1000, after: after, attachment: attachment)
        var listed = page.uploads
        if limit == nil {
            while let next = try await uploads.nextPage(after: page) {
                listed += next.uploads
                page = next
            }
        }
        if options.json {
            console.out(try ClientOptions.json(UploadPage(listed, next: page.next)))
            return ExitCode.success
        }
        if listed.isEmpty {
            let none =
                switch attachment {
                case .any: after == nil ? "No uploads yet.\n" : "No uploads after \(after!).\n"
                case .unattached: "No uploads outside a note.\n"
                case .note(let id): "Note \(id) has no attachments.\n"
                }
            console.out(none)
            return ExitCode.success
        }
        let name = { (upload: Upload) in console.outputIsTerminal ? TextFormat.visible(upload.filename) : upload.filename }
        console.out(
            TextFormat.table(
                ["ID", "SIZE", "CREATED", "NOTE", "NAME"],
                listed.map {
                    [$0.id, TextFormat.bytes($0.size), TextFormat.time($0.createdAt), $0.noteID ?? "-", name($0)]
                }))
        if page.next != nil, let last = listed.last {
            var command = "jotter uploads list"
            switch attachment {
            case .any: break
            case .unattached: command += " --unattached"
            case .note(let id): command += " --note \(id)"
            }
            console.err("More uploads follow: \(command) --after \(last.id) (or --all)\n")
        }
        return ExitCode.success
    }
}

/// `jotter uploads show ID`.
/// Upload ids as the CLI takes them: whole, or — as git takes commits — a unique prefix of at
/// least 4 hex digits (`7c1a`, also written `7c1a…`).
enum UploadID {
    static let fullLength = 24

    /// The whole id that `text` names: itself when it is whole (or no hex prefix at all, for the
    /// server to answer), else the one upload whose id starts with it.
    static func resolve(_ text: String, client: JotterClient) async throws -> String {
        let prefix = trimmed(text)
        guard prefix.count < fullLength, prefix.allSatisfy(\.isHexDigit) else { return text }
        return try match(prefix, among: try await client.uploads.all())
    }

    /// `text` without the `…` (or `...`) that marks an id written short.
    static func trimmed(_ text: String) -> String {
        let lowered = text.lowercased()
        if lowered.hasSuffix("…") { return String(lowered.dropLast()) }
        if lowered.hasSuffix("...") { return String(lowered.dropLast(3)) }
        return lowered
    }

    /// The id among `uploads` that starts with `prefix`: too short is a usage error, none is
    /// "not found" (exit 3), several are listed (exit 2) so a longer prefix can be given.
    static func match(_ prefix: String, among uploads: [Upload]) throws -> String {
        guard prefix.count >= 4 else { throw UsageError("an upload id needs at least 4 characters, not '\(prefix)'") }
        let found = uploads.filter { $0.id.hasPrefix(prefix) }
        switch found.count {
        case 1: return found[0].id
        case 0: throw CommandFailure("no upload has an id starting with \(prefix)", status: ExitCode.notFound)
        default:
            let candidates = found.map { "  \($0.id)  \(TextFormat.visible($0.filename))" }.joined(separator: "\n")
            throw CommandFailure("the id \(prefix) is ambiguous; candidates:\n\(candidates)", status: ExitCode.usage)
        }
    }
}

struct UploadsShowCommand: AsyncCommand, ParsableArguments {
    static let name = "show"
    static let summary = "Show one upload's details."
    static let about =
        "Prints the upload's name, size, type, SHA-256, time, note and download path. ID may be a unique prefix (4 characters or more), as git takes commits."

    @Group var options: ClientOptions
    /// The upload's id, or a unique prefix of it.
    @Operand(.single("ID")) var operands: String

    func run(console: Console) async throws -> Int32 {
        let client = options.client()
        let upload = try await client.uploads.get(try await UploadID.resolve(operands, client: client))
        if options.json {
            console.out(try ClientOptions.json(UploadEnvelope(upload: upload)))
            return ExitCode.success
        }
        let shown = { (text: String) in console.outputIsTerminal ? TextFormat.visible(text) : text }
        console.out(
            """
            upload \(upload.id)
            name     \(shown(upload.filename))
            size     \(TextFormat.bytes(upload.size)) (\(upload.size) bytes)
            type     \(shown(upload.contentType))
            sha256   \(upload.sha256)
            created  \(TextFormat.time(upload.createdAt))
            note     \(UploadsCommand.place(upload))
            content  \(upload.url)

            """)
        return ExitCode.success
    }
}

/// `jotter uploads attach ID NOTE`.
struct UploadsAttachCommand: AsyncCommand, ParsableArguments {
    static let name = "attach"
    static let summary = "Attach an upload to a note (moving it from the note it was on)."
    static let about = """
        Attaches the upload to note NOTE; the note it leaves, if any, and the note it joins get
        new versions. ID may be a unique prefix (4 characters or more). A note in the trash is
        not found (exit 3), and keeps its uploads until it is restored (exit 4).
        """

    @Group var options: ClientOptions
    /// The upload's id (or a unique prefix of it) and the note's.
    @Operand(.pair("ID", "NOTE")) var operands: (String, String)

    func run(console: Console) async throws -> Int32 {
        try await UploadsCommand.attach(operands.0, to: operands.1, options: options, console: console)
    }
}

/// `jotter uploads detach ID`.
struct UploadsDetachCommand: AsyncCommand, ParsableArguments {
    static let name = "detach"
    static let summary = "Detach an upload from its note (the upload is kept)."
    static let about = """
        Detaches the upload from the note it is attached to, which gets a new version; the
        upload stays, attached to no note. ID may be a unique prefix (4 characters or more). A
        note in the trash keeps its uploads until it is restored (exit 4).
        """

    @Group var options: ClientOptions
    /// The upload's id, or a unique prefix of it.
    @Operand(.single("ID")) var operands: String

    func run(console: Console) async throws -> Int32 {
        try await UploadsCommand.attach(operands, to: nil, options: options, console: console)
    }
}

extension UploadsCommand {
    /// Attaches the upload `id` (or a unique prefix) to note `note`, or to none, and says where it is now.
    static func attach(_ id: String, to note: String?, options: ClientOptions, console: Console) async throws -> Int32 {
        let client = options.client()
        let upload = try await client.uploads.attach(try await UploadID.resolve(id, client: client), toNote: note)
        let name = console.outputIsTerminal ? TextFormat.visible(upload.filename) : upload.filename
        console.out(options.json ? try ClientOptions.json(UploadEnvelope(upload: upload)) : "Upload \(upload.id) (\(name)) is \(place(upload)).\n")
        return ExitCode.success
    }
}

/// `jotter uploads rm ID…`.
struct UploadsRemoveCommand: AsyncCommand, ParsableArguments {
    static let name = "rm"
    static let summary = "Delete uploads."
    static let about = """
        Deletes each upload, in turn (a note it was attached to gets a new version). One that
        can't be deleted is reported and the others are still deleted; the exit code is then
        that of the first failure. An ID may be a unique prefix (4 characters or more).
        """

    @Group var options: ClientOptions
    /// The uploads' ids, or unique prefixes of them.
    @Operand(.some("ID")) var operands: [String]

    func run(console: Console) async throws -> Int32 {
        let client = options.client()
        var ids: [String] = []
        for id in operands { ids.append(try await UploadID.resolve(id, client: client)) }
        let uploads = client.uploads
        let terminal = console.outputIsTerminal
        let said = { (upload: Upload) in
            "Deleted upload \(upload.id) (\(terminal ? TextFormat.visible(upload.filename) : upload.filename), \(UploadsCommand.place(upload))).\n"
        }
        let (deleted, status) = try await deleteEach(
            ids, console: console, said: options.json ? nil : said,
            delete: { id throws(JotterClientError) in try await uploads.delete(id) })
        if options.json { console.out(try ClientOptions.json(UploadList(uploads: deleted))) }
        return status
    }
}
