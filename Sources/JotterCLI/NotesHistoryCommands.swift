import JotterCLICore
import JotterAPI
import JotterClient

/// `jotter notes history ID [--version N]`.
struct NotesHistoryCommand: AsyncCommand {
    static let name = "history"
    static let summary = "List a note's kept versions, or show one."
    static let usage = "jotter notes history ID [--version N] [options]"
    static let about = """
    Lists the note's revisions, newest first (VERSION, SAVED, SIZE, MERGED): every saved
    version for the server's --revision-days, then one a day, then one a week. With
    --version N, prints that version's body.
    """
    static let options = [Option("--version", value: "N", help: "Print this version's body instead of the list.")] + ClientOptions.options

    let options: ClientOptions
    let id: String
    let version: Int?

    init(parsing arguments: Arguments) throws {
        options = try ClientOptions(parsing: arguments)
        version = try arguments.option("--version", as: "a version (a whole number from 1)", { Int($0).flatMap { $0 > 0 ? $0 : nil } })
        id = try arguments.single("ID")
    }

    func run(console: Console) async throws -> Int32 {
        let notes = options.client().notes
        if let version {
            let revision = try await notes.revision(id, version: version)
            if options.json {
                console.out(try ClientOptions.json(RevisionEnvelope(revision: revision)))
            } else {
                let body = console.outputIsTerminal ? TextFormat.visible(revision.body) : revision.body
                console.out("note \(id) · version \(revision.version) · saved \(TextFormat.time(revision.createdAt))"
                    + (revision.merged ? " · merged" : "") + "\n\n" + body + (body.hasSuffix("\n") ? "" : "\n"))
            }
            return ExitCode.success
        }
        let revisions = try await notes.allRevisions(id)
        if options.json {
            console.out(try ClientOptions.json(RevisionList(revisions: revisions, next: nil)))
            return ExitCode.success
        }
        console.out(TextFormat.table(["VERSION", "SAVED", "SIZE", "MERGED"], revisions.map {
            [String($0.version), TextFormat.time($0.createdAt), TextFormat.bytes($0.size), $0.merged ? "yes" : ""]
        }))
        return ExitCode.success
    }
}

/// `jotter notes restore ID --version N`.
struct NotesRestoreCommand: AsyncCommand {
    static let name = "restore"
    static let summary = "Bring back a note's earlier version."
    static let usage = "jotter notes restore ID --version N [options]"
    static let about = """
    Saves version N's body (see jotter notes history ID) as the note's newest version; the
    versions in between stay in its history.
    """
    static let options = [Option("--version", value: "N", help: "The version to bring back.")] + ClientOptions.options

    let options: ClientOptions
    let id: String
    let version: Int

    init(parsing arguments: Arguments) throws {
        options = try ClientOptions(parsing: arguments)
        guard let version = try arguments.option("--version", as: "a version (a whole number from 1)", { Int($0).flatMap { $0 > 0 ? $0 : nil } }) else {
            throw UsageError("missing --version N (jotter notes history ID lists them)")
        }
        self.version = version
        id = try arguments.single("ID")
    }

    func run(console: Console) async throws -> Int32 {
        let note = try await options.client().notes.restore(id, version: version)
        console.out(options.json ? try ClientOptions.json(NoteEnvelope(note: note, message: "Note Restored"))
                                 : "Restored note \(note.id) to version \(version)'s text (now version \(note.version)).\n")
        return ExitCode.success
    }
}
