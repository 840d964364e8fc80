import JotterCLICore
import JotterAPI
import JotterClient

/// `jotter notes add TEXT` (or `-` for standard input).
struct NotesAddCommand: AsyncCommand, ParsableArguments {
    static let name = "add"
    static let summary = "Add a note."
    static let about = """
        Creates a note; the words of TEXT are joined by spaces. Prints the new note's id.
        Text that starts with - goes after --: jotter notes add -- --help
        """
    static let otherUsages = [(arguments: "- [options]", note: "the text from standard input, less one final newline")]

    @Group var options: ClientOptions
    /// The words of the text, or `-`.
    @Operand(.some("TEXT", missing: "missing TEXT (or - to read it from standard input)")) var operands: [String]

    func run(console: Console) async throws -> Int32 {
        let body = try console.noteText(operands)
        let note = try await options.client().notes.create(body)
        console.out(options.json ? try ClientOptions.json(NoteEnvelope(note: note)) : "Added note \(note.id).\n")
        return ExitCode.success
    }
}

/// `jotter notes rm ID…`.
struct NotesRemoveCommand: AsyncCommand, ParsableArguments {
    static let name = "rm"
    static let summary = "Move notes, with their attachments, to the trash."
    static let about = """
        Moves each note and its attachments to the trash, in turn: jotter notes trash lists
        them, jotter notes restore ID brings one back (for the server's --trash-days). One that
        can't be deleted is reported and the others are still deleted; the exit code is then
        that of the first failure.
        """

    @Group var options: ClientOptions
    /// The notes' ids.
    @Operand(.some("ID")) var operands: [String]

    func run(console: Console) async throws -> Int32 {
        let notes = options.client().notes
        let (deleted, status) = try await deleteEach(
            operands, console: console, said: options.json ? nil : { (note: Note) in "Deleted note \(note.id).\n" },
            delete: { id throws(JotterClientError) in try await notes.delete(id) })
        if options.json {
            console.out(
                operands.count == 1 && deleted.count == 1
                    ? try ClientOptions.json(NoteEnvelope(note: deleted[0]))
                    : try ClientOptions.json(["notes": deleted]))
        }
        return status
    }
}

extension Console {
    /// A note's text as given on the command line: its words joined by spaces, or standard
    /// input for `-` alone, less one final newline (what `echo` or a file ends with, as
    /// `git commit -F -` drops it).
    func noteText(_ words: [String]) throws -> String {
        guard words == ["-"] else { return words.joined(separator: " ") }
        guard let text = String(validating: readInput(), as: UTF8.self) else {
            throw CommandFailure("standard input is not UTF-8 text")
        }
        return text.hasSuffix("\n") ? String(text.dropLast()) : text
    }
}
