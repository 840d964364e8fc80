#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a backup holds: read from its own database snapshot, so it describes exactly the
/// snapshot and the upload files copied beside it.
public struct BackupContents: Sendable, Hashable {
    /// The schema version of the snapshot.
    public var schemaVersion: Int64
    /// Notes in the snapshot.
    public var notes: Int64
    /// The id of the last change event issued before the snapshot (0 when none).
    public var lastEventID: Int64
    /// The size of the database file in the backup.
    public var databaseSize: Int64
    /// Every upload the snapshot names; each has its file in `uploads/` beside the database.
    public var uploads: [UploadRecord]
}

/// Online backup and restore of a data folder: a consistent snapshot of the database (SQLite's
/// `VACUUM INTO`, which reads one transaction's snapshot while writers go on — never a copy
/// of the live file) and of every upload file that snapshot names.
///
/// A backup folder looks like a data folder: `jotter.sqlite` and `uploads/<id>`.
///
/// ```swift
/// let contents = try DataFolderBackup.snapshot(dataDirectory: "/var/lib/jotter", into: "/backups/2026-12-01")
/// try DataFolderBackup.restore(from: "/backups/2026-12-01", into: "/var/lib/jotter-new", replacing: false)
/// ```
///
/// From another process than the server, an upload deleted between the snapshot and the copy
/// of its file makes the snapshot be taken again (up to `attempts` times); inside the server,
/// `SQLiteStore.backup(into:)` holds deletions back instead, so that never happens.
public enum DataFolderBackup {
    /// How many snapshots a backup from outside the server takes before giving up, when
    /// uploads keep being deleted under it.
    public static let attempts = 5

    /// Snapshots `dataDirectory` into `destination` (created; it must not exist or be empty).
    ///
    /// - Parameters:
    ///   - linkUploads: hard-link the upload files instead of copying them (they never change
    ///     once stored); falls back to a copy across file systems.
    /// - Returns: what the snapshot holds, read back from it after `integrity_check` said ok.
    /// - Throws: `StoreError.notEmpty` when `destination` has files, `.notJotterDatabase` when
    ///   there is no database, SQLite errors.
    public static func snapshot(
        dataDirectory: String, into destination: String,
        linkUploads: Bool = false
    ) throws(StoreError) -> BackupContents {
        let source = databasePath(in: dataDirectory)
        guard access(source, F_OK) == 0 else {
            throw .invalidArgument("there is no \(SQLiteStore.fileName) in \(dataDirectory)")
        }
        try makeEmptyFolder(destination)
        for attempt in 1...attempts {
            let target = databasePath(in: destination)
            do {
                let db = try openForReading(source)
                try db.run("VACUUM INTO ?", [.text(target)])
                db.close()
                let contents = try self.contents(ofBackup: destination, checkFiles: false)
                try FileTransfer.makeFolder(destination + "/uploads")
                for upload in contents.uploads {
                    try FileTransfer.place(
                        dataDirectory + "/uploads/" + upload.id, at: destination + "/uploads/" + upload.id,
                        link: linkUploads)
                }
                FileTransfer.syncFolder(destination + "/uploads")
                FileTransfer.syncFolder(destination)
                return contents
            } catch let missing as FileTransfer.SourceMissing {
                // Deleted after our snapshot by a server in another process: take a new one.
                removeBackupFiles(in: destination)
                if attempt == attempts {
                    throw .invalidArgument("uploads kept being deleted during the backup (\(missing.path)); try again")
                }
            } catch let error as StoreError {
                removeBackupFiles(in: destination)
                throw error
            } catch {
                removeBackupFiles(in: destination)
                throw .system("\(error)")
            }
        }
        throw .invalidArgument("unreachable")
    }

    /// What the backup (or data folder) at `folder` holds, after SQLite's `integrity_check`
    /// said ok; with `checkFiles`, also that every upload file is there with its size.
    ///
    /// - Throws: `.corrupt` when the integrity check or a file fails, `.newerSchema` when
    ///   the snapshot is from a newer jotter.
    public static func contents(ofBackup folder: String, checkFiles: Bool = true) throws(StoreError) -> BackupContents {
        let path = databasePath(in: folder)
        guard access(path, R_OK) == 0 else { throw .invalidArgument("there is no readable \(SQLiteStore.fileName) in \(folder)") }
        let db = try openForReading(path)
        defer { db.close() }
        let problems = try db.query("PRAGMA integrity_check") { $0.string(0) }
        guard problems == ["ok"] else {
            throw .corrupt("\(path) failed SQLite's integrity_check: \(problems.prefix(3).joined(separator: "; "))")
        }
        let contents = try db.readTransaction { () throws(StoreError) -> BackupContents in
            let version = try SQLiteSchema.storedVersion(db, fileName: path)
            guard version <= SQLiteSchema.current else {
                throw StoreError.newerSchema(file: path, found: version, supported: SQLiteSchema.current)
            }
            guard version >= 2 else { throw StoreError.notJotterDatabase(file: path) }
            return BackupContents(
                schemaVersion: version,
                notes: try db.first("SELECT count(*) FROM notes") { $0.int64(0) } ?? 0,
                lastEventID: try NoteRows.lastEventID(on: db),
                databaseSize: FileTransfer.size(of: path) ?? 0,
                uploads: try db.query("SELECT \(UploadRows.columns) FROM uploads ORDER BY rowid") { UploadRows.record($0) })
        }
        if checkFiles {
            for upload in contents.uploads {
                let file = folder + "/uploads/" + upload.id
                guard let size = FileTransfer.size(of: file) else { throw .corrupt("\(file) is missing") }
                guard size == upload.size else { throw .corrupt("\(file) has \(size) bytes, not \(upload.size)") }
            }
        }
        return contents
    }

    /// Restores the backup at `backup` into `dataDirectory`, which must be empty or not exist
    /// unless `replacing` (then its database and uploads are replaced; other files are left).
    /// Refused while a server has `dataDirectory` open.
    ///
    /// The database is written under a temporary name and renamed into place last, after the
    /// upload files: an interrupted restore leaves no database behind, only files the next
    /// start removes.
    ///
    /// The restored database starts a new history (`startNewHistory`): clients that synced
    /// with the server after the backup was taken hold cursors and note ids the restored
    /// database never saw, and must neither be answered from them nor find them again.
    public static func restore(from backup: String, into dataDirectory: String, replacing: Bool) throws(StoreError) -> BackupContents {
        let contents = try self.contents(ofBackup: backup)
        if access(dataDirectory, F_OK) != 0 {
            try FileTransfer.makeFolder(dataDirectory)
        }
        let lock = try DataFolderLock(dataDirectory, exclusive: true)
        defer { lock.unlock() }
        var replaced: [String: Int64] = [:]
        if !FileTransfer.entries(of: dataDirectory).isEmpty {
            guard replacing else { throw .notEmpty("\(dataDirectory) is not empty") }
            replaced = idsIssued(in: databasePath(in: dataDirectory))
            removeBackupFiles(in: dataDirectory)
            for name in FileTransfer.entries(of: dataDirectory + "/tmp") { unlink(dataDirectory + "/tmp/" + name) }
        }
        let staging = databasePath(in: dataDirectory) + ".restoring"
        unlink(staging)
        do {
            try FileTransfer.makeFolder(dataDirectory + "/uploads")
            for upload in contents.uploads {
                try FileTransfer.place(backup + "/uploads/" + upload.id, at: dataDirectory + "/uploads/" + upload.id, link: false)
            }
            FileTransfer.syncFolder(dataDirectory + "/uploads")
            let db = try openForReading(databasePath(in: backup))
            try db.run("VACUUM INTO ?", [.text(staging)])
            db.close()
            try startNewHistory(at: staging, after: replaced)
            guard rename(staging, databasePath(in: dataDirectory)) == 0 else {
                throw StoreError.system("cannot move the restored database into place: \(String(cString: strerror(errno)))")
            }
            FileTransfer.syncFolder(dataDirectory)
        } catch let error as StoreError {
            unlink(staging)
            throw error
        } catch {
            unlink(staging)
            throw .corrupt("\(error)")
        }
        return contents
    }

    /// How far a restore moves note and event ids on past the highest issued: room for the
    /// notes and events a lost server made after its backup, when the database it had is not
    /// there to say how many (a restore onto a new machine).
    static let restoreGap: Int64 = 1_000_000

    /// The highest note and event ids the database at `path` has issued, when it can be read
    /// (the database a restore replaces); none when it can't.
    static func idsIssued(in path: String) -> [String: Int64] {
        guard access(path, F_OK) == 0, let db = try? openForReading(path) else { return [:] }
        defer { db.close() }
        let rows = try? db.query("SELECT name, seq FROM sqlite_sequence WHERE name IN ('notes', 'events')") { ($0.string(0), $0.int64(1)) }
        return Dictionary(rows ?? [], uniquingKeysWith: max)
    }

    /// Makes the restored database at `path` start a new history, so that what clients learned
    /// from the server after the backup was taken cannot be mistaken for it:
    /// - note and event ids go on `restoreGap` past the highest issued by the backup or by the
    ///   database replaced (`replaced`), so no id is issued twice;
    /// - the change feed holds no cursor from before (`feed_marks.pruned_through`): each client
    ///   walks the complete state once, and drops what it held that the restore took back;
    /// - the event backlog is emptied: a stream resumed with a `Last-Event-ID` from before is
    ///   told to reload.
    static func startNewHistory(at path: String, after replaced: [String: Int64]) throws(StoreError) {
        let db = try SQLiteConnection(path: path, flags: SQLiteConnection.readWriteExisting)
        defer { db.close() }
        try db.run("BEGIN IMMEDIATE")
        do throws(StoreError) {
            for table in ["notes", "events"] {
                let issued = try db.first("SELECT seq FROM sqlite_sequence WHERE name = ?", [.text(table)]) { $0.int64(0) } ?? 0
                let next = max(issued, replaced[table] ?? 0) + restoreGap
                try db.run("DELETE FROM sqlite_sequence WHERE name = ?", [.text(table)])
                try db.run("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", [.text(table), .integer(next)])
            }
            try db.run("DELETE FROM events")
            // A backup from before the feed (schema 9) gets its mark from the migration that
            // makes it, from the events' ids as set here.
            if try db.first("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'feed_marks'", row: { _ in true }) == true {
                try db.run("UPDATE feed_marks SET pruned_through = (SELECT seq FROM sqlite_sequence WHERE name = 'events')")
            }
            try db.run("COMMIT")
        } catch {
            if !db.isAutocommit { try? db.run("ROLLBACK") }
            throw error
        }
    }

    // MARK: - Helpers

    static func databasePath(in folder: String) -> String {
        (folder.hasSuffix("/") ? folder : folder + "/") + SQLiteStore.fileName
    }

    /// A read-only connection; a read-write one (which changes nothing either) when the folder
    /// lacks the `-shm` file a read-only connection to a WAL database needs.
    private static func openForReading(_ path: String) throws(StoreError) -> SQLiteConnection {
        do {
            let db = try SQLiteConnection(path: path, flags: SQLiteConnection.readOnly)
            _ = try db.first("SELECT count(*) FROM sqlite_master") { $0.int64(0) }
            return db
        } catch {
            return try SQLiteConnection(path: path, flags: SQLiteConnection.readWriteExisting)
        }
    }

    /// Creates `folder` (and its parents), or checks that it is empty.
    private static func makeEmptyFolder(_ folder: String) throws(StoreError) {
        if access(folder, F_OK) == 0 {
            guard FileTransfer.entries(of: folder).isEmpty else { throw .notEmpty("\(folder) is not empty") }
        } else {
            try FileTransfer.makeFolder(folder)
        }
    }

    /// Removes the database (with its `-wal`/`-shm`) and every upload file from `folder`.
    private static func removeBackupFiles(in folder: String) {
        let db = databasePath(in: folder)
        for path in [db, db + "-wal", db + "-shm", db + "-journal"] { unlink(path) }
        for name in FileTransfer.entries(of: folder + "/uploads") { unlink(folder + "/uploads/" + name) }
    }
}

/// Online snapshots of a store (`DataStore.backups`).
public protocol StoreBackups: Sendable {
    /// A consistent backup of the store, taken while writes go on, into `destination`
    /// (created; must be empty); `linkUploads`: upload files hard-linked where they can be
    /// rather than copied.
    func backup(into destination: String, linkUploads: Bool) throws(StoreError) -> BackupContents
}

extension SQLiteStore: StoreBackups {
    /// A consistent backup of this store, taken while writes go on: the database snapshot and
    /// a hard link (or copy) of every upload file it names, into `destination` (created; must
    /// be empty). Upload files deleted meanwhile stay until the files are placed.
    public func backup(into destination: String, linkUploads: Bool = true) throws(StoreError) -> BackupContents {
        holdRemovals()
        defer { releaseRemovals() }
        return try DataFolderBackup.snapshot(dataDirectory: dataDirectory, into: destination, linkUploads: linkUploads)
    }
}
