import JotterCLICore
import JotterAPI
import JotterClient

/// `jotter notes history ID [--version N]`.
struct NotesHistoryCommand: AsyncCommand, ParsableArguments {
    static let name = "history"
    static let summary = "List a note's kept versions, or show one."
    static let about = """
        Lists the note's revisions, newest first (VERSION, SAVED, SIZE, MERGED): every saved
        version for the server's --revision-days, then one a day, then one a week. With
        --version N, prints that version's body. A deleted note keeps its history in the trash:
        --trash reads it there.
        """

    @Group var options: ClientOptions
    @Value(Option.integer("--version", help: "Print this version's body instead of the list.")) var version: Int?
    @Value(Option.flag("--trash", help: "The note is in the trash (see jotter notes trash).")) var inTrash: Bool
    @Operand(.single("ID")) var id: String

    func run(console: Console) async throws -> Int32 {
        let notes = options.client().notes
        if let version {
            let revision = try await notes.revision(id, version: version, inTrash: inTrash)
            if options.json {
                console.out(try ClientOptions.json(RevisionEnvelope(revision: revision)))
            } else {
                let body = console.outputIsTerminal ? TextFormat.visible(revision.body) : revision.body
                console.out(
                    "note \(id) · version \(revision.version) · saved \(TextFormat.time(revision.createdAt))"
                        + (revision.merged ? " · merged" : "") + "\n\n" + body + (body.hasSuffix("\n") ? "" : "\n"))
            }
            return ExitCode.success
        }
        let revisions = try await notes.allRevisions(id, inTrash: inTrash)
        if options.json {
            console.out(try ClientOptions.json(RevisionList(revisions, next: nil)))
            return ExitCode.success
        }
        console.out(
            TextFormat.table(
                ["VERSION", "SAVED", "SIZE", "MERGED"],
                revisions.map {
                    [String($0.version), TextFormat.time($0.createdAt), TextFormat.bytes($0.size), $0.merged ? "yes" : ""]
                }))
        return ExitCode.success
    }
}

/// `jotter notes restore ID [--version N]`.
struct NotesRestoreCommand: AsyncCommand, ParsableArguments {
    static let name = "restore"
    static let summary = "Bring back a deleted note, or a note's earlier version."
    static let about = """
        Without --version, brings the note back from the trash (see jotter notes trash) with
        its id, text and attachments. With --version N, saves version N's body (see jotter notes
        history ID) as the note's newest version; the versions in between stay in its history.
        """

    @Group var options: ClientOptions
    /// nil: from the trash.
    @Value(Option.integer("--version", help: "The version to bring back (of a note that is not deleted).")) var version: Int?
    @Operand(.single("ID")) var id: String

    func run(console: Console) async throws -> Int32 {
        let notes = options.client().notes
        let note: Note, said: String
        if let version {
            note = try await notes.restore(id, version: version)
            said = "Restored note \(note.id) to version \(version)'s text (now version \(note.version)).\n"
        } else {
            note = try await notes.restore(id)
            said = "Restored note \(note.id) from the trash (now version \(note.version)).\n"
        }
        console.out(options.json ? try ClientOptions.json(NoteEnvelope(note: note, message: "Note Restored")) : said)
        return ExitCode.success
    }
}

/// `jotter notes trash [--limit N | --all] [--after ID]`, `--purge ID…`, `--empty`.
struct NotesTrashCommand: AsyncCommand, ParsableArguments {
    static let name = "trash"
    static let summary = "List deleted notes; remove them for good."
    static let about = """
        Lists the deleted notes (ID, DELETED, first line of the body), most recently deleted
        first. A deleted note stays in the trash for the server's --trash-days, then is removed
        for good with its history and attachments; until then jotter notes restore ID brings it
        back. --purge and --empty remove notes at once, attachments included; this can't be undone.
        """
    static let otherUsages = [
        (arguments: "--purge ID… [options]", note: "remove these notes from the trash for good"),
        (arguments: "--empty [options]", note: "remove every note in the trash for good"),
    ]
    /// The first usage line is the listing; `otherUsages` give --purge and --empty.
    static let usageShowsOperands = false
    static let usageOptions = options.filter { !["--purge", "--empty"].contains($0.key) }

    enum Action {
        case list(limit: Int?, after: String?)
        case purge([String])
        case empty
    }

    @Group var options: ClientOptions
    @Value(Option.integer("--limit", default: "\(ClientOptions.defaultLimit)", help: "At most N notes.")) var limit: Int?
    @Value(Option.flag("--all", help: "Every deleted note, however many (following the server's pages).").alternative()) var all: Bool
    @Value(Option.text("--after", value: "ID", help: "Start after this note id (where a previous listing stopped).")) var after: String?
    @Value(Option.flag("--purge", help: "Remove the notes ID… from the trash for good.")) var purge: Bool
    @Value(Option.flag("--empty", help: "Remove every note in the trash for good.").alternative()) var empty: Bool
    @Operand(.any("ID")) var ids: [String]
    private(set) var action = Action.empty

    mutating func validate(_ arguments: Arguments) throws {
        let listing = limit != nil || all || after != nil
        switch (purge, empty) {
        case (true, true):
            throw UsageError("choose --purge ID… or --empty, not both")
        case (true, false):
            guard !listing else { throw UsageError("--purge removes notes; --limit, --all and --after are for the list") }
            guard !ids.isEmpty else { throw UsageError("missing ID: --purge ID… (jotter notes trash lists them)") }
            action = .purge(ids)
        case (false, true):
            guard !listing, ids.isEmpty else {
                throw UsageError("--empty removes every note in the trash and takes no ID (--purge ID… removes some)")
            }
            action = .empty
        case (false, false):
            guard ids.isEmpty else { throw UsageError("unexpected \(ids[0]): to remove notes from the trash, --purge ID…") }
            action = .list(limit: try ClientOptions.count(limit, all: all), after: after)
        }
    }

    func run(console: Console) async throws -> Int32 {
        let notes = options.client().notes
        switch action {
        case .list(let limit, let after):
            var page = try await notes.trash(limit: min(limit ?? 1000, 1000), after: after)
            var deleted = page.notes
            while page.next != nil, limit.map({ deleted.count < $0 }) ?? true {
                page = try await notes.trash(limit: min((limit ?? 1000) - (limit == nil ? 0 : deleted.count), 1000), after: deleted.last?.id)
                deleted += page.notes
            }
            if options.json {
                console.out(try ClientOptions.json(TrashList(deleted, next: page.next)))
                return ExitCode.success
            }
            if deleted.isEmpty {
                console.out(after == nil ? "The trash is empty.\n" : "No deleted notes after \(after!).\n")
                return ExitCode.success
            }
            let excerpt = { (note: Note) in TextFormat.excerpt(console.outputIsTerminal ? TextFormat.visible(note.body) : note.body, width: 60) }
            console.out(TextFormat.table(["ID", "DELETED", "BODY"], deleted.map { [$0.id, TextFormat.time($0.deletedAt), excerpt($0.note)] }))
            if page.next != nil, let last = deleted.last {
                console.err("More deleted notes: jotter notes trash --after \(last.id) (or --all)\n")
            }
            return ExitCode.success
        case .purge(let ids):
            let (purged, status) = try await deleteEach(
                ids, console: console,
                said: options.json ? nil : { (id: String) in "Removed note \(id) from the trash for good.\n" },
                delete: { id throws(JotterClientError) in
                    try await notes.deleteFromTrash(id); return id
                })
            if options.json { console.out(try ClientOptions.json(["purged": purged])) }
            return status
        case .empty:
            let ids = try await notes.allTrash().map(\.id)
            let (purged, status) = try await deleteEach(
                ids, console: console, said: nil,
                delete: { id throws(JotterClientError) in
                    try await notes.deleteFromTrash(id); return id
                })
            console.out(
                options.json
                    ? try ClientOptions.json(["purged": purged])
                    : purged.isEmpty && status == ExitCode.success
                        ? "The trash was already empty.\n"
                        : "Removed \(purged.count) \(purged.count == 1 ? "note" : "notes") from the trash for good.\n")
            return status
        }
    }
}
