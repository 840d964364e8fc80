import JotterCLICore
import JotterAPI
import JotterClient

/// `jotter notes …`: the notes on the server.
struct NotesCommand: CommandGroup {
    static let name = "notes"
    static let summary = "List, show, add, edit, remove and watch notes."
    static let subcommands: [any Command.Type] = [
        NotesListCommand.self, NotesShowCommand.self, NotesAddCommand.self, NotesEditCommand.self, NotesRemoveCommand.self,
        NotesWatchCommand.self,
    ]
    static var help: String {
        """
        USAGE: jotter notes <subcommand> [options]

        SUBCOMMANDS:
        \(JotterCommandLine.listing(subcommands))

        Each takes --server URL (JOTTER_SERVER) and --json; see jotter notes <subcommand> --help.

        """
    }

    /// One note for people: a heading line, then the body.
    static func describe(_ note: Note) -> String {
        var text = "note \(note.id) · version \(note.version) · created \(note.createdAt) · updated \(note.updatedAt)\n"
        for upload in note.attachments {
            text += "attachment \(upload.id): \(upload.filename) (\(TextFormat.bytes(upload.size)), \(upload.contentType))\n"
        }
        return text + "\n" + note.body + (note.body.hasSuffix("\n") ? "" : "\n")
    }
}

/// `jotter notes list [--search WORDS] [--limit N]`.
struct NotesListCommand: AsyncCommand {
    static let name = "list"
    static let summary = "List notes, newest first."
    static let help = """
    USAGE: jotter notes list [--search WORDS] [--limit N] [options]

    Lists notes newest first as a table (ID, UPDATED, first line of the body), following the
    server's pages as needed.

    OPTIONS:
      --search WORDS                Only notes matching these words (full-text search).
      --limit N                     At most N notes (default 100).
    \(ClientOptions.help)

    """

    let options: ClientOptions
    let search: String?
    let limit: Int

    init(parsing arguments: inout Arguments) throws {
        options = try ClientOptions(parsing: &arguments)
        search = try arguments.option("search")
        limit = try arguments.option("limit", as: "a positive whole number", { Int($0).flatMap { $0 > 0 ? $0 : nil } }) ?? 100
        try arguments.finish()
    }

    func run(console: Console) async throws -> Int32 {
        var notes: [Note] = []
        for try await note in options.client().notes.all(query: search, pageSize: min(limit, 1000)) {
            notes.append(note)
            if notes.count == limit { break }
        }
        if options.json {
            console.out(try ClientOptions.json(["notes": notes]))
        } else if notes.isEmpty {
            console.out(search == nil ? "No notes yet.\n" : "No notes match '\(search!)'.\n")
        } else {
            console.out(TextFormat.table(["ID", "UPDATED", "BODY"], notes.map { [$0.id, $0.updatedAt, TextFormat.excerpt($0.body, width: 60)] }))
        }
        return ExitCode.success
    }
}

/// `jotter notes show ID`.
struct NotesShowCommand: AsyncCommand {
    static let name = "show"
    static let summary = "Show one note in full."
    static let help = """
    USAGE: jotter notes show ID [options]

    Prints the note's id, version, times and attachments, then its body.

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
        let note = try await options.client().notes.get(id)
        console.out(options.json ? try ClientOptions.json(NoteEnvelope(note: note)) : NotesCommand.describe(note))
        return ExitCode.success
    }
}
