import JotterCLICore
import JotterAPI
import JotterClient

/// `jotter notes …`: the notes on the server.
struct NotesCommand: CommandGroup {
    static let name = "notes"
    static let summary = "List, show, add, edit, remove and watch notes; their history; the trash."
    static let subcommands: [any Command.Type] = [
        NotesListCommand.self, NotesShowCommand.self, NotesAddCommand.self, NotesEditCommand.self, NotesRemoveCommand.self,
        NotesWatchCommand.self, NotesHistoryCommand.self, NotesRestoreCommand.self, NotesTrashCommand.self, NotesChangesCommand.self,
    ]
    static let about = "Each takes --server URL (JOTTER_SERVER) and --json; see jotter notes <subcommand> --help."

    /// One note for people: a heading line, then the body; on a terminal, control characters
    /// in the body and file names are made visible.
    static func describe(_ note: Note, terminal: Bool) -> String {
        let shown = { (text: String) in terminal ? TextFormat.visible(text) : text }
        var text =
            "note \(note.id) · version \(note.version) · created \(TextFormat.time(note.createdAt)) · updated \(TextFormat.time(note.updatedAt))\n"
        for upload in note.attachments {
            text += "attachment \(upload.id): \(shown(upload.filename)) (\(TextFormat.bytes(upload.size)), \(shown(upload.contentType)))\n"
        }
        return text + "\n" + shown(note.body) + (note.body.hasSuffix("\n") ? "" : "\n")
    }
}

/// `jotter notes list [--search WORDS] [--limit N | --all] [--order newest|oldest|updated] [--after CURSOR]`.
struct NotesListCommand: AsyncCommand, ParsableArguments {
    static let name = "list"
    static let summary = "List notes, newest first."
    static let about = """
        Lists notes as a table (ID, UPDATED, first line of the body), newest first unless
        --order oldest, or the last changed first with --order updated. When more notes follow,
        it says how many on standard error and how to see them; with --json the server's `next`
        link is kept.
        """

    @Group var options: ClientOptions
    @Value(Option.text("--search", value: "WORDS", help: "Only notes matching these words (full-text search).")) var search: String?
    /// `nil` with `--all`.
    @Value(
        Option.integer("--limit", default: "\(ClientOptions.defaultLimit)", help: "At most N notes."),
        Option.flag("--all", help: "Every note, however many (following the server's pages).").alternative(), ClientOptions.count)
    var limit: Int?
    @Value(
        Option.choice(
            "--order", choices: [("newest", JotterClient.Notes.Order.newestFirst), ("oldest", .oldestFirst), ("updated", .recentlyUpdated)],
            help: "Which notes come first (updated: the last changed)."
        ).defaulting(to: .newestFirst, shown: "newest"))
    var order: JotterClient.Notes.Order
    @Value(
        Option.text(
            "--after", value: "CURSOR",
            help: "Start where a previous listing stopped (a note id; with --order updated, the cursor it printed)."))
    var after: String?

    func run(console: Console) async throws -> Int32 {
        let client = options.client()
        // Pages sized to what is still wanted, so the last page's `next` continues exactly after it.
        var page = try await client.notes.list(query: search, limit: min(limit ?? 1000, 1000), after: after, order: order)
        var notes = page.notes
        while page.next != nil, limit.map({ notes.count < $0 }) ?? true {
            page = try await client.notes.list(
                query: search, limit: min((limit ?? 1000) - (limit == nil ? 0 : notes.count), 1000),
                after: Self.cursor(of: page.next) ?? notes.last?.id, order: order)
            notes += page.notes
        }
        if options.json {
            console.out(try ClientOptions.json(NoteList(notes, next: page.next)))
            return ExitCode.success
        }
        if notes.isEmpty {
            console.out(search.map { "No notes match '\($0)'.\n" } ?? (after == nil ? "No notes yet.\n" : "No notes after \(after!).\n"))
            return ExitCode.success
        }
        let excerpt = { (note: Note) in TextFormat.excerpt(console.outputIsTerminal ? TextFormat.visible(note.body) : note.body, width: 60) }
        console.out(TextFormat.table(["ID", "UPDATED", "BODY"], notes.map { [$0.id, TextFormat.time($0.updatedAt), excerpt($0)] }))
        if page.next != nil, let last = Self.cursor(of: page.next) ?? notes.last?.id {
            console.err(try await moreHint(client, after: last))
        }
        return ExitCode.success
    }

    /// The `after` a `next` link sets: the note id, or with `--order updated` the server's cursor.
    static func cursor(of next: String?) -> String? {
        guard let next, let query = next.split(separator: "?", maxSplits: 1).last else { return nil }
        return query.split(separator: "&").first { $0.hasPrefix("after=") }.map { String($0.dropFirst(6)) }
    }

    /// `37 more notes: jotter notes list --after 12 (or --all)`, counting up to 1000 more.
    private func moreHint(_ client: JotterClient, after last: String) async throws -> String {
        let following = try await client.notes.list(query: search, limit: 1000, after: last, order: order)
        let count = following.next == nil ? "\(following.notes.count)" : "over 1000"
        var command = "jotter notes list"
        if let search { command += " --search '\(search.replacingOccurrences(of: "'", with: "'\\''"))'" }
        if order == .oldestFirst { command += " --order oldest" }
        if order == .recentlyUpdated { command += " --order updated" }
        return "\(count) more \(following.notes.count == 1 && following.next == nil ? "note" : "notes"): \(command) --after \(last) (or --all)\n"
    }
}

/// `jotter notes show ID`.
struct NotesShowCommand: AsyncCommand, ParsableArguments {
    static let name = "show"
    static let summary = "Show one note in full."
    static let about = "Prints the note's id, version, times and attachments, then its body."

    @Group var options: ClientOptions
    /// The note's id.
    @Operand(.single("ID")) var operands: String

    func run(console: Console) async throws -> Int32 {
        let note = try await options.client().notes.get(operands)
        console.out(options.json ? try ClientOptions.json(NoteEnvelope(note: note)) : NotesCommand.describe(note, terminal: console.outputIsTerminal))
        return ExitCode.success
    }
}
