import JotterCLICore
import JotterAPI
import JotterClient

/// `jotter notes watch`: live changes, one line each, until interrupted.
struct NotesWatchCommand: AsyncCommand {
    static let name = "watch"
    static let summary = "Print changes to notes as they happen."
    static let help = """
    USAGE: jotter notes watch [--since EVENT-ID] [options]

    Prints one line per change (created, updated, deleted) until interrupted (Ctrl-C).
    Reconnects by itself when the connection drops, without missing changes. With --json,
    one JSON object per line: {"id":…,"event":"note.created","note":{…}}.

    OPTIONS:
      --since EVENT-ID              Replay the changes after this event id first.
    \(ClientOptions.help)

    """

    /// One line of `--json` output.
    struct Line: Encodable {
        var id: Int64?
        var event: String
        var note: Note?
    }

    let options: ClientOptions
    let since: Int64?

    init(parsing arguments: inout Arguments) throws {
        options = try ClientOptions(parsing: &arguments)
        since = try arguments.option("since", as: "an event id (a whole number)", { Int64($0).flatMap { $0 >= 0 ? $0 : nil } })
        try arguments.finish()
    }

    func run(console: Console) async throws -> Int32 {
        for try await event in options.client().notes.events(lastEventID: since) {
            let (kind, note): (String, Note?) = switch event.change {
            case .created(let note): ("created", note)
            case .updated(let note): ("updated", note)
            case .deleted(let note): ("deleted", note)
            case .reload: ("reload", nil)
            }
            if options.json {
                let line = Line(id: event.id, event: note == nil ? kind : "note.\(kind)", note: note)
                console.out(try ClientOptions.json(line, pretty: false))
            } else if let note {
                console.out("\(note.updatedAt)  \(kind) note \(note.id)  \(TextFormat.excerpt(note.body, width: 60))\n")
            } else {
                console.out("Some changes could not be replayed: list the notes again (jotter notes list).\n")
            }
        }
        return ExitCode.success
    }
}
