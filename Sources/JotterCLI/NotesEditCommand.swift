import JotterCLICore
import Foundation
import JotterAPI
import JotterClient

/// `jotter notes edit ID [TEXT]`: replace the body, or edit it in `$EDITOR`; saved only if
/// nobody changed the note meanwhile.
struct NotesEditCommand: AsyncCommand, ParsableArguments {
    static let name = "edit"
    static let summary = "Change a note's text (in $EDITOR when no TEXT is given)."
    static let about = """
        Replaces the note's text with TEXT, or opens it in $VISUAL or $EDITOR (default vi).
        The change is saved with If-Match: when the note changed on the server meanwhile,
        nothing is overwritten, it says so and exits 4 (your text is kept in a file).
        """
    static let otherUsages = [(arguments: "ID - [options]", note: "the text from standard input, less one final newline")]

    @Group var options: ClientOptions
    /// The note's id, and the words of the text, or `-`; none: the editor.
    @Operand(.single("ID", then: "TEXT")) var operands: (String, [String])
    var id: String { operands.0 }
    var words: [String] { operands.1 }
    private(set) var environment: [String: String] = [:]

    mutating func validate(_ arguments: Arguments) throws { environment = arguments.environment }

    func run(console: Console) async throws -> Int32 {
        let text = words.isEmpty ? nil : try console.noteText(words)
        let client = options.client()
        let note = try await client.notes.get(id)
        let edited: String
        if let text {
            edited = text
        } else {
            edited = try await Editor(environment: environment).edit(note.body, name: "jotter-note-\(note.id)")
            guard edited != note.body else {
                console.out("No change: note \(note.id) left as it was.\n")
                return ExitCode.success
            }
        }
        do {
            let saved = try await client.notes.update(note.id, body: edited, ifMatch: note.etag)
            console.out(options.json ? try ClientOptions.json(NoteEnvelope(note: saved)) : "Saved note \(saved.id) (version \(saved.version)).\n")
            return ExitCode.success
        } catch let error as JotterClientError where error.isConflict {
            let kept = text == nil ? Editor.keep(edited, name: "jotter-note-\(note.id)") : nil
            throw CommandFailure(
                "note \(note.id) was changed on the server while you edited it (you started from version \(note.version)); "
                    + "nothing was saved\(kept.map { ". Your text is in \($0)" } ?? ""). See it with: jotter notes show \(note.id)",
                status: ExitCode.conflict)
        }
    }
}

/// Opens text in the user's editor, as git does: `$VISUAL`, else `$EDITOR`, else `vi`, run
/// by the shell with the file as its argument.
struct Editor {
    let environment: [String: String]

    /// The text after the editor exits successfully. A final newline the editor added is
    /// dropped when the text had none.
    func edit(_ text: String, name: String) async throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString.prefix(8)).txt")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let command = [environment["VISUAL"], environment["EDITOR"]].compactMap { $0 }.first { !$0.isEmpty } ?? "vi"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command + " \"$1\"", "editor", file.path]
        process.environment = environment
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: CommandFailure("cannot start the editor '\(command)': \(error)")) }
        }
        guard status == 0 else { throw CommandFailure("the editor '\(command)' exited with status \(status); nothing was saved") }
        var edited = String(decoding: try Data(contentsOf: file), as: UTF8.self)
        if edited.hasSuffix("\n"), !text.hasSuffix("\n") { edited.removeLast() }
        return edited
    }

    /// Saves `text` where the user can find it; its path, or `nil`.
    static func keep(_ text: String, name: String) -> String? {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-unsaved-\(UUID().uuidString.prefix(8)).txt")
        return (try? Data(text.utf8).write(to: file)).map { file.path }
    }
}
