import JotterCLICore
import Foundation
import Glibc
import JotterAPI
import JotterClient
import JotterServer
import JotterStore
import JotterSystem

/// `jotter backup DEST [--data DIR]`: an online backup into a new folder.
struct BackupCommand: AsyncCommand, ParsableArguments {
    static let name = "backup"
    static let summary = "Back up a running server (or a data folder) while it takes writes."
    static let about = """
        Writes a consistent backup into the folder DEST (created; it must be empty): the
        database as one snapshot taken while writes go on (SQLite's VACUUM INTO, never a copy
        of the live file), every upload that snapshot names, and backup.json (versions, counts,
        each upload's size and SHA-256). Every file is checked before it reports success: the
        database with SQLite's integrity_check, each upload against its SHA-256.

        Without --data it asks the server (--server URL) for the snapshot and fetches its files,
        a progress bar on a terminal. With --data it reads the data folder directly, whether or
        not a server is running on it. Restore with: jotter restore DEST --data DIR
        A server on PostgreSQL refuses (501): back up its database (pg_dump) and its blob
        store with their own tools (docs/deployment.md).
        """

    @Group var options: ClientOptions
    @Value(Option.text("--data", value: "DIR", help: "Back up this data folder directly instead of a server.")) var data: String?
    @Operand(.single("DEST")) var destination: String

    func run(console: Console) async throws -> Int32 {
        let backup: Backup
        if let data {
            if console.isTerminal { console.err("taking a snapshot of \(data)…\r") }
            let contents = try BackupFolder.failure { () throws(StoreError) in
                try DataFolderBackup.snapshot(dataDirectory: data, into: destination)
            }
            if console.isTerminal { console.err("\u{1B}[K") }
            backup = BackupFolder.manifest(contents)
        } else {
            backup = try await fetch(console: console)
        }
        try BackupFolder.verify(destination, console: console)
        try BackupFolder.writeManifest(backup, in: destination)
        if options.json {
            console.out(try ClientOptions.json(BackupEnvelope(backup: backup)))
        } else {
            let bytes = backup.uploads.reduce(backup.databaseSize) { $0 + $1.size }
            console.out(
                "backed up \(TextFormat.count(Int(backup.notes), "note")) and \(TextFormat.count(backup.uploads.count, "upload")) (\(TextFormat.bytes(bytes))) to \(destination)\n"
            )
        }
        return ExitCode.success
    }

    /// The server's snapshot, fetched into `destination` file by file; removed from the
    /// server afterwards, whatever happened.
    private func fetch(console: Console) async throws -> Backup {
        try BackupFolder.failure { () throws(StoreError) in try BackupFolder.prepareEmpty(destination) }
        let client = options.client()
        var backup = try await client.backups.create()
        do {
            let folder = URL(fileURLWithPath: destination)
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("uploads"), withIntermediateDirectories: true)
            let total = backup.uploads.reduce(backup.databaseSize) { $0 + $1.size }
            let bar = ProgressBar(label: "backup", console: console)
            defer { bar.finish() }
            var done: Int64 = 0
            let files = [("jotter.sqlite", backup.databaseSize)] + backup.uploads.map { ("uploads/" + $0.id, $0.size) }
            for (file, size) in files {
                let before = done
                try await client.backups.download(backup, file: file, to: folder.appendingPathComponent(file)) {
                    bar.update(completed: before + $0.completed, total: total)
                }
                done += size
            }
        } catch {
            try? await client.backups.delete(backup.id)
            throw error
        }
        try? await client.backups.delete(backup.id)
        backup.filesURL = "."
        return backup
    }
}

/// `jotter restore SRC --data DIR [--force]`: a backup back into a data folder;
/// `jotter restore --database URL`: a new history for a PostgreSQL database pg_restore put back.
/// Each form takes only its own options: `validate(_:)` says which.
struct RestoreCommand: BlockingCommand, ParsableArguments {
    static let name = "restore"
    static let summary = "Restore a backup into a data folder, or start a new history after pg_restore."
    static let about = """
        Checks the backup folder SRC (SQLite's integrity_check, every upload file against its
        SHA-256, a schema this jotter understands), then restores it into the data folder DIR:
        the database last, so an interrupted restore leaves no database behind. Start the
        server on DIR afterwards. DIR must be empty or missing unless --force, which replaces
        its database and uploads. Refused while a server is running on DIR. The restored
        database starts a new history: note and event ids go on past any issued before, and
        every client walks the restored state once (docs/deployment.md).

        For a deployment on PostgreSQL, restore its database (pg_restore) and its bucket with
        their own tools, then run jotter restore --database URL with every instance stopped
        (refused while one runs): the database starts a new history the same way. A database
        restored into another PostgreSQL cluster (a new machine) starts one by itself when an
        instance opens it.
        """
    static let otherUsages = [(arguments: "--database URL", note: "after pg_restore: start a new history on PostgreSQL")]
    static var usageOptions: [Option] { options(without: ["--database"]) }

    @Operand(.optional("SRC", shownRequired: true)) var source: String?
    @Value(Option.text("--data", value: "DIR", help: "The data folder to restore into (required with SRC).").shownRequired())
    var data: String?
    @Value(Option.flag("--force", help: "Replace the database and uploads already in DIR.")) var force: Bool
    @Value(Option.flag("--json", help: "Print what was restored as JSON.")) var json: Bool
    @Value(
        Option.text(
            "--database", value: "URL", help: "Without SRC: start a new history on this PostgreSQL database (postgres://…) after pg_restore."))
    var database: String?

    /// Which form it is: SRC with --data, or --database URL alone.
    func validate(_ arguments: Arguments) throws {
        switch (source, database) {
        case (_?, nil):
            if data == nil { throw UsageError("missing --data DIR (the data folder to restore into)") }
        case (nil, _?):
            if data != nil || force || json { throw UsageError("--database URL takes no --data, --force or --json") }
        case (_?, _?):
            throw UsageError("--database URL takes no SRC: restore the database with pg_restore first")
        case (nil, nil):
            throw UsageError("missing SRC (or --database URL)")
        }
    }

    func run(console: Console) throws -> Int32 {
        // `validate(_:)` let through SRC with --data, or --database alone.
        if let source, let data { return try restore(source, into: data, console: console) }
        return try startNewHistory(database ?? "", console: console)
    }

    private func restore(_ source: String, into data: String, console: Console) throws -> Int32 {
        try BackupFolder.verify(source, console: console)
        let contents: BackupContents
        do {
            contents = try DataFolderBackup.restore(from: source, into: data, replacing: force)
        } catch let error where error == .notEmpty {
            throw CommandFailure("\(data) is not empty; pass --force to replace its database and uploads")
        } catch {
            throw CommandFailure("cannot restore \(source): \(error)")
        }
        let backup = BackupFolder.manifest(contents, described: BackupFolder.readManifest(in: source))
        if json {
            console.out(try ClientOptions.json(BackupEnvelope(backup: backup)))
        } else {
            console.out(
                "restored \(TextFormat.count(Int(contents.notes), "note")) and \(TextFormat.count(contents.uploads.count, "upload")) from \(source) into \(data)\n"
            )
        }
        return ExitCode.success
    }

    private func startNewHistory(_ url: String, console: Console) throws -> Int32 {
        var configuration = StoreConfiguration(dataDirectory: DataFolder.defaultData)
        do { configuration.database = try .parse(url, poolSize: 1) } catch { throw UsageError(error.message) }
        guard case .postgres(let url, _) = configuration.database else {
            throw UsageError("--database takes a PostgreSQL URL (postgres://…); a data folder is restored from SRC with --data DIR")
        }
        try DataFolder.requireJotterData(url, described: configuration.databaseDescription, else: "restore it with pg_restore first")
        let started: PostgresStore.NewHistory
        do { started = try PostgresStore.startNewHistory(url: url) } catch {
            throw CommandFailure("cannot start a new history on \(configuration.databaseDescription): \(error)")
        }
        if let migration = started.migration { console.out(migration.description + "\n") }
        console.out(
            "started a new history on \(configuration.databaseDescription): event ids go on after \(started.eventsFrom), "
                + "note ids from \(started.nextNoteID); every client walks its notes once\n")
        return ExitCode.success
    }
}

/// What backing up and restoring share: the backup folder's checks and its manifest.
enum BackupFolder {
    static let manifestName = "backup.json"

    /// The manifest of a folder's contents, its files beside it: the id, time and jotter
    /// version are `described`'s — the backup's own `backup.json` — when there is one, else
    /// no id, now and this jotter.
    static func manifest(_ contents: BackupContents, described: Backup? = nil) -> Backup {
        Backup(
            id: described?.id ?? "", createdAt: described?.createdAt ?? Timestamp.date(seconds: Int64(time(nil))),
            jotterVersion: described?.jotterVersion ?? JotterBuild.version,
            schemaVersion: contents.schemaVersion, notes: contents.notes, lastEventID: contents.lastEventID,
            databaseSize: contents.databaseSize, uploads: contents.uploads.map(Upload.init), filesURL: ".")
    }

    /// The `backup.json` of the backup folder `folder`, or nil when it has none (or not one
    /// this jotter reads).
    static func readManifest(in folder: String) -> Backup? {
        guard let data = FileManager.default.contents(atPath: folder + "/" + manifestName) else { return nil }
        return try? JSONDecoder().decode(Backup.self, from: data)
    }

    static func writeManifest(_ backup: Backup, in folder: String) throws {
        let path = folder + "/" + manifestName
        do {
            try Data(try ClientOptions.json(backup).utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw CommandFailure("cannot write \(path): \(error.localizedDescription)")
        }
    }

    /// Fails unless `folder` is a whole backup: the database passes `integrity_check` and
    /// every upload file it names has its size and SHA-256.
    static func verify(_ folder: String, console: Console) throws {
        let contents = try failure { () throws(StoreError) in try DataFolderBackup.contents(ofBackup: folder) }
        let bar = ProgressBar(label: "checking", console: console)
        defer { bar.finish() }
        let total = contents.uploads.reduce(0) { $0 + $1.size }
        var done: Int64 = 0
        for upload in contents.uploads {
            let path = folder + "/uploads/" + upload.id
            guard let digest = sha256(of: path), digest == upload.sha256 else {
                throw CommandFailure("\(path) does not have the SHA-256 its upload was stored with; the backup is damaged")
            }
            done += upload.size
            bar.update(completed: done, total: total)
        }
    }

    /// The SHA-256 of the file at `path`, or nil when it can't be read.
    static func sha256(of path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var hash = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { return nil }
            if count == 0 { return hash.finish() }
            buffer.withUnsafeBytes { hash.update(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
        }
    }

    /// Creates `folder`, or checks that it is empty.
    static func prepareEmpty(_ folder: String) throws(StoreError) {
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: folder) {
            guard entries.isEmpty else { throw StoreError.notEmpty }
        }
    }

    /// Runs a store call, turning its error into a one-line command failure.
    static func failure<T>(_ body: () throws(StoreError) -> T) throws -> T {
        do {
            return try body()
        } catch let error where error == .notEmpty {
            throw CommandFailure("the backup folder is not empty; give a new or empty folder")
        } catch {
            throw CommandFailure(error.message)
        }
    }
}
