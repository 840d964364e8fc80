import JotterCLICore
import JotterAPI
import JotterClient

/// `jotter notes add TEXT` (or `-` for standard input).
struct NotesAddCommand: AsyncCommand {
    static let name = "add"
    static let summary = "Add a note."
    static let help = """
    USAGE: jotter notes add TEXT… [options]
           jotter notes add - [options]      (the text from standard input)

    Creates a note; the words of TEXT are joined by spaces. Prints the new note's id.

    OPTIONS:
    \(ClientOptions.help)

    """

    let options: ClientOptions
    let words: [String]

    init(parsing arguments: inout Arguments) throws {
        options = try ClientOptions(parsing: &arguments)
        words = try arguments.positionals()
        guard !words.isEmpty else { throw UsageError("missing TEXT (or - to read it from standard input)") }
    }

    func run(console: Console) async throws -> Int32 {
        let body: String
        if words == ["-"] {
            guard let text = String(validating: console.readInput(), as: UTF8.self) else {
                throw CommandFailure("standard input is not UTF-8 text")
            }
            body = text
        } else {
            body = words.joined(separator: " ")
        }
        let note = try await options.client().notes.create(body)
        console.out(options.json ? try ClientOptions.json(NoteEnvelope(note: note)) : "Added note \(note.id).\n")
        return ExitCode.success
    }
}

/// `jotter notes rm ID`.
struct NotesRemoveCommand: AsyncCommand {
    static let name = "rm"
    static let summary = "Delete a note and its attachments."
    static let help = """
    USAGE: jotter notes rm ID [options]

    Deletes the note and its attachments.

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
        let note = try await options.client().notes.delete(id)
        console.out(options.json ? try ClientOptions.json(NoteEnvelope(note: note)) : "Deleted note \(note.id).\n")
        return ExitCode.success
    }
}
