#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A backup: what `POST /admin/backups` made on the server, and the `backup.json` that
/// `jotter backup` writes beside the database in a backup folder.
///
/// The files are `jotter.sqlite` (`databaseSize` bytes) and `uploads/<id>` for every upload,
/// fetched from `filesURL` + `/jotter.sqlite` and `filesURL` + `/uploads/<id>`.
public struct Backup: Codable, Sendable, Hashable {
    /// The snapshot's id on the server; empty in a backup taken from a data folder directly.
    public var id: String
    /// When the snapshot was taken (whole seconds; UTC `yyyy-MM-dd HH:mm:ss` on the wire).
    @Timestamped public var createdAt: Date
    /// The jotter that made it.
    public var jotterVersion: String
    /// The database schema version of the snapshot.
    public var schemaVersion: Int64
    /// Notes in the snapshot.
    public var notes: Int64
    /// The last change event issued before the snapshot.
    public var lastEventID: Int64
    /// Bytes of `jotter.sqlite`.
    public var databaseSize: Int64
    /// Every upload the snapshot names, with its size and SHA-256.
    public var uploads: [Upload]
    /// `/admin/backups/{id}/files`: where the snapshot's files are served; `.` in
    /// `backup.json`, whose files are beside it.
    public var filesURL: String

    enum CodingKeys: String, CodingKey {
        case id
        case createdAt = "created_at"
        case jotterVersion = "jotter_version"
        case schemaVersion = "schema_version"
        case notes
        case lastEventID = "last_event_id"
        case databaseSize = "database_size"
        case uploads
        case filesURL = "files_url"
    }

    public init(
        id: String, createdAt: Date, jotterVersion: String, schemaVersion: Int64, notes: Int64, lastEventID: Int64,
        databaseSize: Int64, uploads: [Upload], filesURL: String
    ) {
        self.id = id
        self.createdAt = createdAt
        self.jotterVersion = jotterVersion
        self.schemaVersion = schemaVersion
        self.notes = notes
        self.lastEventID = lastEventID
        self.databaseSize = databaseSize
        self.uploads = uploads
        self.filesURL = filesURL
    }
}

/// `{"backup":{…}}`.
public struct BackupEnvelope: Codable, Sendable, Hashable {
    public var backup: Backup
    public init(backup: Backup) { self.backup = backup }
}

/// The version of this jotter build: in `User-Agent`, `jotter --version`, `/metrics` and backups.
public enum JotterBuild {
    public static let version = "0.1.0"
}
