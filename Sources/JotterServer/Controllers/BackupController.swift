#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Glibc
import JotterAPI
import JotterHTTP
import JotterStore
import Synchronization

/// `/admin/backups`: online backups of the running server, fetched file by file.
///
/// `POST /admin/backups` takes a consistent snapshot into `<data>/backups/<id>/` — the
/// database by `VACUUM INTO`, every upload it names hard-linked beside it — while writes go
/// on, and answers `201 {"backup":{…}}` listing the files. `GET /admin/backups/{id}/files/jotter.sqlite`
/// and `…/files/uploads/{upload}` serve them (ranges, so downloads resume); `DELETE
/// /admin/backups/{id}` removes the snapshot. Snapshots left behind are removed an hour after
/// they were made (checked whenever one is made, and at start-up). One snapshot is made at a
/// time: a second `POST` meanwhile is `409`.
///
/// With PostgreSQL there is nothing here to snapshot (the data is the database's and the
/// bucket's, backed up with their own tools): `POST` is `501`.
final class BackupController: Sendable {
    let store: any DataStore
    /// The store's snapshots; nil when it has none (`DataStore.backups`).
    let backups: (any StoreBackups)?
    /// `<data>/backups`.
    let folder: String
    /// Seconds a snapshot is kept when nobody deletes it.
    let keepSeconds: Int64 = 3600
    private let busy = Atomic<Bool>(false)

    init(store: any DataStore, dataDirectory: String) {
        self.store = store
        backups = store.backups
        folder = dataDirectory + "/backups"
        removeExpired()
    }

    func register(in routes: inout RouterBuilder) {
        // A snapshot reads the whole database: on the store's threads.
        routes.post(
            "/admin/backups", body: .noBody, runs: backups == nil ? nil : store.blockingPlace, operation: BackupOperations.create, handler: create)
        routes.delete("/admin/backups/:id", body: .noBody, operation: BackupOperations.delete, handler: delete)
        routes.get("/admin/backups/:id/files/jotter.sqlite", operation: BackupOperations.database, handler: database)
        routes.get("/admin/backups/:id/files/uploads/:upload", operation: BackupOperations.upload, handler: upload)
    }

    @Sendable func create(_ request: Request, _ context: RequestContext) throws -> Response {
        guard let backups else {
            throw HTTPError(
                HTTPStatus(501),
                detail: "this server keeps its data in PostgreSQL: back up the database (pg_dump) "
                    + "and the blob store with their own tools")
        }
        guard busy.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            throw HTTPError(HTTPStatus(409), detail: "a backup is being made; try again when it is done")
        }
        let result = Result { try snapshot(backups) }
        busy.store(false, ordering: .releasing)
        let envelope = try result.get()
        return try JSON(envelope, status: .created, headers: HTTPHeaders([("Location", "/admin/backups/\(envelope.backup.id)")]))
            .response(for: request)
    }

    private func snapshot(_ backups: any StoreBackups) throws -> BackupEnvelope {
        removeExpired()
        let id = UploadRecord.newID()
        let contents: BackupContents
        do {
            contents = try backups.backup(into: folder + "/" + id, linkUploads: true)
        } catch {
            try? FileManager.default.removeItem(atPath: folder + "/" + id)
            throw HTTPError(.internalServerError, detail: "the backup failed: \(error)")
        }
        let backup = Backup(
            id: id, createdAt: Timestamp.date(seconds: Int64(time(nil))), jotterVersion: JotterBuild.version,
            schemaVersion: contents.schemaVersion, notes: contents.notes, lastEventID: contents.lastEventID,
            databaseSize: contents.databaseSize, uploads: contents.uploads.map(Upload.init),
            filesURL: "/admin/backups/\(id)/files")
        return BackupEnvelope(backup: backup)
    }

    @Sendable func delete(_ request: Request, _ context: RequestContext) throws -> Response {
        let path = try existing(context)
        try? FileManager.default.removeItem(atPath: path)
        return Response(status: .noContent)
    }

    @Sendable func database(_ request: Request, _ context: RequestContext) throws -> Response {
        try serve(try existing(context) + "/" + SQLiteStore.fileName, request: request)
    }

    @Sendable func upload(_ request: Request, _ context: RequestContext) throws -> Response {
        let id = context.parameters["upload"] ?? ""
        guard id.utf8.count == 24, id.utf8.allSatisfy(ASCII.isHexLowercase) else {
            throw HTTPError(.notFound, detail: "upload \(id) is not in this backup")
        }
        return try serve(try existing(context) + "/uploads/" + id, request: request, missing: "upload \(id) is not in this backup")
    }

    /// The file as `application/octet-stream`, with single-range requests so downloads resume.
    private func serve(_ path: String, request: Request, missing: String = "the file is not in this backup") throws -> Response {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw HTTPError(.notFound, detail: missing) }
        var info = stat()
        fstat(fd, &info)
        return try Response.ranged(
            fd: fd, size: UInt64(info.st_size), range: request.headers["Range"],
            headers: HTTPHeaders([("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes")]),
            what: "the file")
    }

    /// The snapshot's folder; `404` for an id that is not one.
    private func existing(_ context: RequestContext) throws -> String {
        let id = context.parameters["id"] ?? ""
        let path = folder + "/" + id
        guard id.utf8.count == 24, id.utf8.allSatisfy(ASCII.isHexLowercase), access(path, F_OK) == 0 else {
            throw HTTPError(.notFound, detail: "backup \(id) does not exist")
        }
        return path
    }

    /// Removes snapshots older than `keepSeconds`.
    private func removeExpired() {
        let now = Date()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            let path = folder + "/" + name
            let made = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date ?? now
            if now.timeIntervalSince(made) > Double(keepSeconds) { try? FileManager.default.removeItem(atPath: path) }
        }
    }
}
