import JotterCLICore
import JotterAPI
import JotterClient

/// `jotter notes add TEXT` (or `-` for standard input).
struct NotesAddCommand: AsyncCommand {
    static let name = "add"
    static let summary = "Add a note."
    static let usage = """
    jotter notes add TEXT… [options]
           jotter notes add - [options]      (the text from standard input)
    """
    static let about = """
    Creates a note; the words of TEXT are joined by spaces. Prints the new note's id.
    Text that starts with - goes after --: jotter notes add -- --help
    """
    static let options = ClientOptions.options

    let options: ClientOptions
    let words: [String]

    init(parsing arguments: Arguments) throws {
        options = try ClientOptions(parsing: arguments)
        words = arguments.positionals()
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

/// `jotter notes rm ID…`.
struct NotesRemoveCommand: AsyncCommand {
    static let name = "rm"
    static let summary = "Delete notes and their attachments."
    static let usage = "jotter notes rm ID… [options]"
    static let about = """
    Deletes each note and its attachments, in turn. One that can't be deleted is reported
    and the others are still deleted; the exit code is then that of the first failure.
    """
    static let options = ClientOptions.options

    let options: ClientOptions
    let ids: [String]

    init(parsing arguments: Arguments) throws {
        options = try ClientOptions(parsing: arguments)
        ids = arguments.positionals()
        guard !ids.isEmpty else { throw UsageError("missing ID") }
    }

    func run(console: Console) async throws -> Int32 {
        let client = options.client()
        var deleted: [Note] = []
        var status = ExitCode.success
        for id in ids {
            switch await Self.delete(id, client: client) {
            case .success(let note):
                deleted.append(note)
                if !options.json { console.out("Deleted note \(note.id).\n") }
            case .failure(let error):
                // A server that can't be reached won't answer for the next ids either.
                if error.isTransport || ids.count == 1 { throw error }
                let failure = CommandFailure(error)
                console.err("error: \(failure.message)\n")
                if status == ExitCode.success { status = failure.status }
            }
        }
        if options.json {
            console.out(ids.count == 1 && deleted.count == 1 ? try ClientOptions.json(NoteEnvelope(note: deleted[0]))
                                                               : try ClientOptions.json(["notes": deleted]))
        }
        return status
    }

    private static func delete(_ id: String, client: JotterClient) async -> Result<Note, JotterClientError> {
        do { return .success(try await client.notes.delete(id)) } catch { return .failure(error) }
    }
}
