import JotterCLICore
import Foundation
import JotterAPI
import JotterClient

/// `jotter notes watch`: live changes, one line each, until interrupted.
struct NotesWatchCommand: AsyncCommand, ParsableArguments {
    static let name = "watch"
    static let summary = "Print changes to notes as they happen."
    static let about = """
        Prints one line per change until interrupted (Ctrl-C): the event id (for --since), the
        time of the change, what happened to which note, and the start of its text. Reconnects
        by itself when the connection drops, without missing changes (saying so on standard
        error). With --json, one JSON object per line: {"id":…,"event":"note.created","note":{…}}.
        """

    @Group var options: ClientOptions
    @Value(
        Option.integer("--since", value: "EVENT-ID", in: 0...Int.max, noun: "event id", help: "Replay the changes after this event id first.")
            .map { $0.map(Int64.init) })
    var since: Int64?

    /// One line of `--json` output.
    struct Line: Encodable {
        var id: Int64?
        var event: String
        var note: Note?
        /// For a deletion: when it happened.
        var deletedAt: Date?

        enum CodingKeys: String, CodingKey {
            case id, event, note, deletedAt = "deleted_at"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(id, forKey: .id)
            try container.encode(event, forKey: .event)
            try container.encodeIfPresent(note, forKey: .note)
            try container.encodeTimestampIfPresent(deletedAt, forKey: .deletedAt)
        }
    }

    func run(console: Console) async throws -> Int32 {
        let events = options.client().notes.events(lastEventID: since) { interruption in
            console.err("reconnecting in \(TextFormat.oneDecimal(interruption.delay)) s (\(interruption.reason.message))…\n")
        }
        for try await event in events {
            let (kind, note): (String, Note?) =
                switch event.change {
                case .created(let note): ("created", note)
                case .updated(let note): ("updated", note)
                case .deleted(let note): ("deleted", note)
                case .reload: ("reload", nil)
                }
            if options.json {
                let line = Line(id: event.id, event: note == nil ? kind : "note.\(kind)", note: note, deletedAt: event.deletedAt)
                console.out(try ClientOptions.json(line, pretty: false))
            } else if let note {
                // A deletion's note is as it was: its times are not the deletion's, which the event says
                // (a server before it did: now).
                let time =
                    switch event.change {
                    case .created: TextFormat.time(note.createdAt)
                    case .deleted: TextFormat.time(event.deletedAt ?? Date())
                    default: TextFormat.time(note.updatedAt)
                    }
                let body = console.outputIsTerminal ? TextFormat.visible(note.body) : note.body
                console.out("event \(event.id.map(String.init) ?? "-")  \(time)  \(kind) note \(note.id)  \(TextFormat.excerpt(body, width: 60))\n")
            } else {
                console.out("Some changes could not be replayed: list the notes again (jotter notes list).\n")
            }
        }
        return ExitCode.success
    }
}
