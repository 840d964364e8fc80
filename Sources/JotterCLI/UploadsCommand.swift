import JotterCLICore
import JotterAPI
import JotterClient

/// `jotter uploads …`: the files stored on the server.
struct UploadsCommand: CommandGroup {
    static let name = "uploads"
    static let summary = "List, show and remove uploaded files."
    static let subcommands: [any Command.Type] = [UploadsListCommand.self, UploadsShowCommand.self, UploadsRemoveCommand.self]
    static var help: String {
        """
        USAGE: jotter uploads <subcommand> [options]

        SUBCOMMANDS:
        \(JotterCommandLine.listing(subcommands))

        Each takes --server URL (JOTTER_SERVER) and --json; see jotter uploads <subcommand> --help.
        Upload files with jotter upload, fetch them with jotter download.

        """
    }

    /// Where an upload belongs, for people.
    static func place(_ upload: Upload) -> String {
        upload.noteID.map { "note \($0)" } ?? "no note"
    }
}

/// `jotter uploads list [--note ID | --unattached] [--limit N | --all]`.
struct UploadsListCommand: AsyncCommand {
    static let name = "list"
    static let summary = "List uploads, newest first."
    static let help = """
    USAGE: jotter uploads list [--note ID | --unattached] [--limit N | --all] [options]

    Lists uploads newest first as a table (ID, SIZE, CREATED, NOTE, NAME). When there are more
    than shown, says so on standard error; --json keeps the server's "next" link.

    OPTIONS:
      --note ID                     Only the files attached to this note.
      --unattached                  Only the files attached to no note.
      --limit N                     At most N uploads (default 100, at most 1000).
      --after ID                    Start after this upload (a page's last id).
      --all                         Every upload, following the server's pages.
    \(ClientOptions.help)

    """

    let options: ClientOptions
    let attachment: JotterClient.Uploads.Attachment
    let limit: Int
    let after: String?
    let all: Bool

    init(parsing arguments: inout Arguments) throws {
        options = try ClientOptions(parsing: &arguments)
        let note = try arguments.option("note")
        let unattached = arguments.flag("unattached")
        if note != nil && unattached { throw UsageError("choose --note ID or --unattached, not both") }
        attachment = note.map { .note($0) } ?? (unattached ? .unattached : .any)
        let limit = try arguments.option("limit", as: "a whole number from 1 to 1000", { Int($0).flatMap { (1...1000).contains($0) ? $0 : nil } })
        after = try arguments.option("after")
        all = arguments.flag("all")
        if all && (limit != nil || after != nil) { throw UsageError("--all lists every upload: leave out --limit and --after") }
        self.limit = limit ?? 100
        try arguments.finish()
    }

    func run(console: Console) async throws -> Int32 {
        let uploads = options.client().uploads
        let page: UploadPage
        if all {
            page = UploadPage(uploads: try await uploads.all(attachment: attachment), next: nil)
        } else {
            page = try await uploads.page(limit: limit, after: after, attachment: attachment)
        }
        if options.json {
            console.out(try ClientOptions.json(page))
            return ExitCode.success
        }
        if page.uploads.isEmpty {
            let none = switch attachment {
            case .any: "No uploads yet.\n"
            case .unattached: "No uploads outside a note.\n"
            case .note(let id): "Note \(id) has no attachments.\n"
            }
            console.out(none)
        } else {
            console.out(TextFormat.table(["ID", "SIZE", "CREATED", "NOTE", "NAME"], page.uploads.map {
                [$0.id, TextFormat.bytes($0.size), $0.createdAt, $0.noteID ?? "-", $0.filename]
            }))
        }
        if let next = page.next, let last = page.uploads.last {
            console.err("More uploads follow: --after \(last.id) for the next page, --all for every one (\(next)).\n")
        }
        return ExitCode.success
    }
}

/// `jotter uploads show ID`.
struct UploadsShowCommand: AsyncCommand {
    static let name = "show"
    static let summary = "Show one upload's details."
    static let help = """
    USAGE: jotter uploads show ID [options]

    Prints the upload's name, size, type, SHA-256, time, note and download path.

    OPTIONS:
    \(ClientOptions.help)

    """

    let options: ClientOptions
    let id: String

    init(parsing arguments: inout Arguments) throws {
        options = try ClientOptions(parsing: &arguments)
        id = try arguments.single("ID")
    }

    func run(console: Console) async throws -> Int32 {
        let upload = try await options.client().uploads.get(id)
        if options.json {
            console.out(try ClientOptions.json(UploadEnvelope(upload: upload)))
        } else {
            console.out("""
            upload \(upload.id)
            name     \(upload.filename)
            size     \(TextFormat.bytes(upload.size)) (\(upload.size) bytes)
            type     \(upload.contentType)
            sha256   \(upload.sha256)
            created  \(upload.createdAt)
            note     \(UploadsCommand.place(upload))
            content  \(upload.url)

            """)
        }
        return ExitCode.success
    }
}

/// `jotter uploads rm ID…`.
struct UploadsRemoveCommand: AsyncCommand {
    static let name = "rm"
    static let summary = "Delete uploads."
    static let help = """
    USAGE: jotter uploads rm ID… [options]

    Deletes each upload, in order (its note, if any, changes version). Stops at the first
    that can't be deleted.

    OPTIONS:
    \(ClientOptions.help)

    """

    let options: ClientOptions
    let ids: [String]

    init(parsing arguments: inout Arguments) throws {
        options = try ClientOptions(parsing: &arguments)
        ids = try arguments.positionals()
        guard !ids.isEmpty else { throw UsageError("missing ID") }
    }

    func run(console: Console) async throws -> Int32 {
        let uploads = options.client().uploads
        var deleted: [Upload] = []
        for id in ids {
            let upload = try await uploads.delete(id)
            deleted.append(upload)
            if !options.json { console.out("Deleted upload \(upload.id) (\(upload.filename), \(UploadsCommand.place(upload))).\n") }
        }
        if options.json { console.out(try ClientOptions.json(UploadList(uploads: deleted))) }
        return ExitCode.success
    }
}
