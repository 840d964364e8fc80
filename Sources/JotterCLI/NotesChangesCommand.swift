import JotterCLICore
import JotterAPI
import JotterClient

/// `jotter notes changes [--since CURSOR] [--limit N]`.
struct NotesChangesCommand: AsyncCommand, ParsableArguments {
    static let name = "changes"
    static let summary = "List the notes changed since a cursor (the change feed)."
    static let about = """
        Lists every note changed after CURSOR, once each, in the order the changes were
        committed (ID, VERSION, CHANGE, first line of the body), following the server's pages,
        then prints the cursor to pass as --since next time on standard error. Without --since,
        every note. The cursor is an event id: jotter notes watch --since CURSOR goes on from it.
        When the server no longer holds CURSOR, it lists every note and says so (drop the notes
        it did not list). --json prints the server's pages as one: {"changes", "cursor", "more",
        "reset"}.
        """

    @Group var options: ClientOptions
    @Value(
        Option.integer(
            "--since", value: "CURSOR", in: Int.min...Int.max, noun: "cursor (a whole number)",
            help: "The cursor a previous run printed, or an event id (default: everything)."
        ).map { $0.map(Int64.init) })
    var since: Int64?
    @Value(Option.integer("--limit", default: "all", help: "At most N changes (one page of them; the cursor goes on after them)."))
    var limit: Int?

    func run(console: Console) async throws -> Int32 {
        let notes = options.client().notes
        var changes: [NoteChangeEntry] = [], cursor = since, reset = false
        var page: NoteChangeList
        repeat {
            page = try await notes.changes(since: cursor, limit: limit.map { min($0, 1000) })
            changes += page.changes
            cursor = page.cursor
            reset = reset || page.reset
        } while page.more && limit == nil
        if options.json {
            console.out(try ClientOptions.json(NoteChangeList(changes: changes, cursor: page.cursor, more: page.more, reset: reset)))
            return ExitCode.success
        }
        if changes.isEmpty {
            console.out(since == nil ? "No notes yet.\n" : "No changes since \(since!).\n")
        } else {
            let excerpt = { (text: String) in TextFormat.excerpt(console.outputIsTerminal ? TextFormat.visible(text) : text, width: 50) }
            console.out(
                TextFormat.table(
                    ["ID", "VERSION", "CHANGE", "BODY"],
                    changes.map { change in
                        [change.id, String(change.version), change.note == nil ? "deleted" : "changed", change.note.map { excerpt($0.body) } ?? ""]
                    }))
        }
        if reset && since != nil {
            console.err("The server no longer holds cursor \(since!): these are all the notes; any other is gone.\n")
        }
        console.err(
            page.more
                ? "More follow: jotter notes changes --since \(page.cursor)\n"
                : "Cursor: \(page.cursor) (jotter notes changes --since \(page.cursor))\n")
        return ExitCode.success
    }
}
