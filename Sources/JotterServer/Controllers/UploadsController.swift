import Glibc
import JotterBlobs
import JotterAPI
import JotterHTTP
import JotterStore
import JotterStoreHTTP

/// `/uploads` (and `POST /upload`, the path of the original upload recipe): store files,
/// optionally attached to a note; list, show, download (ETag, single Range) and delete them.
///
/// With the local folder, a file part streams to a temporary file, which the handler renames
/// into the folder on a store thread. With a bucket, a file part streams into the bucket as it
/// arrives (`BucketFileStore`: a multipart upload, no temporary file), and the handler stores
/// the last part and completes it. Either way the row is recorded only after the bytes are
/// whole. Downloads come from the blob store: by `sendfile` from the local folder, streamed
/// from the bucket otherwise.
struct UploadsController {
    let store: any DataStore
    let events: EventBroadcaster
    let resumable: ResumableUploads
    /// Where file parts go when the blob store has multipart uploads (a bucket); nil: temporary files.
    let bucketFiles: BucketFileStore?

    init(store: any DataStore, events: EventBroadcaster, resumable: ResumableUploads) {
        self.store = store
        self.events = events
        self.resumable = resumable
        bucketFiles = BucketFileStore(store.blobs)
    }

    func register(in routes: inout RouterBuilder) {
        // Only the override header counts, never a `_method` field. A body that is not
        // multipart is one file's raw bytes (resumable with the draft's fields or tus's:
        // `ResumableUploads`).
        let resumable = resumable, bucketFiles = bucketFiles
        let creation = BodyPolicy.choosing { head in
            MediaType(head.headers["Content-Type"] ?? "")?.essence == "multipart/form-data" ? .multipart(files: bucketFiles) : resumable.creation
        }
        // Storing a file's bytes blocks (fsync, or the network): on the store's threads.
        let storing = store.blockingPlace
        routes.post("/uploads", body: creation, runs: storing, operation: UploadsOperations.create, handler: create)
        routes.post("/upload", body: creation, runs: storing, operation: UploadsOperations.alias, handler: create)
        routes.on(.options, "/uploads", operation: UploadsOperations.options) { request, context in resumable.options(request, context) }
        routes.get("/uploads", operation: UploadsOperations.list, handler: list)
        routes.get("/uploads/:id", operation: UploadsOperations.show, handler: show)
        routes.on(.head, "/uploads/:id", operation: UploadsOperations.offset, handler: head)
        routes.patch(
            "/uploads/:id", body: .choosing { head in ResumableUploads.isAppend(head) ? resumable.append : .buffered() },
            runs: storing, operation: UploadsOperations.attach, handler: attach)
        routes.delete("/uploads/:id", body: .noBody, operation: UploadsOperations.delete, handler: delete)
        // A bucket's object is asked for before the answer (an empty one by a HEAD request).
        routes.get(
            "/uploads/:id/content", runs: store.blobs.readsBlock ? storing : nil, operation: UploadsOperations.content,
            handler: content)
    }

    @Sendable func create(_ request: Request, _ context: RequestContext) throws -> Reply {
        if let receiver = request.bodyStream as? UploadReceiver { return try resumable.finish(request, context, receiver: receiver) }
        let fields = try request.body()
        guard case .form = fields, MediaType(request.headers["Content-Type"] ?? "")?.essence == "multipart/form-data" else {
            throw HTTPError(.unsupportedMediaType, detail: "send the files as multipart/form-data")
        }
        // A file input left empty (`filename=""`, no bytes) is no file; the request's end
        // discards its bytes with every part not stored.
        let files = request.files.filter { !$0.isEmptyFileInput }
        guard !files.isEmpty else {
            throw HTTPError.validation([.init(field: "file", message: "at least one file part is required")])
        }
        let target = try UploadInput.multipartNote(form: fields.string("note_id"), query: request.query()["note_id"])
        let store = store, owner = context.owner
        // Moving the bytes blocks (fsync, or the network): the route runs on the store's threads.
        let uploads = try Self.storeBytes(files, in: store.blobs, streamed: bucketFiles)
        let answer = { @Sendable (added: UploadsAdded?) throws -> Response in
            guard let added else { throw HTTPError(.notFound, detail: "note \(target.map(String.init) ?? "") does not exist") }
            return try JSON(UploadList(uploads: added.uploads.map(Upload.init)), status: .created).response(for: request)
        }
        if let claim = context[IdempotencyKeyed.self] {
            // The key is claimed in the rows' own transaction.
            return Reply.later { done in
                store.addUploads(uploads, noteID: target, owner: owner, claiming: claim) { result in
                    done {
                        switch try result.get() {
                        case .refused(let found): throw IdempotencyRefused(claim: found)
                        case .done(let added): return try answer(added)
                        }
                    }
                }
            }
        }
        return Reply.later { done in
            store.addUploads(uploads, noteID: target, owner: owner) { result in done { try answer(try result.get()) } }
        }
    }

    /// Puts each file's bytes in the blob store under a fresh id (a file streamed to the bucket
    /// is completed there under the id it got when it began); on a failure, removes those
    /// already put, abandons those streamed and not completed, and throws.
    private static func storeBytes(_ files: [UploadedFile], in blobs: any BlobStore, streamed: BucketFileStore?) throws -> [NewUpload] {
        var uploads: [NewUpload] = []
        var writers = files.map { file in streamed?.take(file.location) }
        defer { for writer in writers { writer?.abandon() } }
        do {
            for (index, file) in files.enumerated() {
                let id: String
                if let writer = writers[index] {
                    writers[index] = nil
                    id = writer.id
                    try writer.commit()
                } else {
                    id = UploadRecord.newID()
                    try blobs.put(UploadRecord.blobKey(id), movingFile: file.location)
                }
                uploads.append(
                    NewUpload(
                        id: id, filename: file.filename,
                        contentType: UploadPolicy.contentType(file.contentType, isUTF8: file.isUTF8 == true),
                        size: file.size, sha256: file.sha256))
            }
        } catch {
            for upload in uploads { try? blobs.delete(UploadRecord.blobKey(upload.id)) }
            throw error
        }
        return uploads
    }

    @Sendable func list(_ request: Request, _ context: RequestContext) throws -> Reply {
        let query = try UploadInput.query(request)
        let store = store, owner = context.owner
        var page = query
        page.limit = query.limit + 1  // one more tells whether there is a next page
        guard var records = try store.uploads(page, owner: owner) else {
            throw HTTPError.badQuery([
                .init(field: "after", message: "names no upload of yours (or one deleted over a week ago): list again from the start")
            ])
        }
        let more = records.count > query.limit
        if more { records.removeLast() }
        let next = more ? records.last.map { UploadInput.next(query, last: $0.id) } : nil
        return try JSON(UploadPage(records.map(Upload.init), next: next)).reply(for: request)
    }

    /// `PATCH /uploads/{id}` with `note_id`: attaches the upload to that note (empty: to none).
    @Sendable func attach(_ request: Request, _ context: RequestContext) throws -> Reply {
        if let receiver = request.bodyStream as? UploadReceiver { return try resumable.finish(request, context, receiver: receiver) }
        let store = store, owner = context.owner
        let upload = try existing(context)
        guard let text = try request.body().string("note_id") else {
            throw HTTPError.validation([.init(field: "note_id", message: "is required (empty for no note)")])
        }
        let noteID = try UploadInput.noteField(text)
        return Reply.later { done in
            store.attachUpload(id: upload.id, noteID: noteID, owner: owner) { result in
                done {
                    guard let attached = try result.get() else { throw HTTPError(.notFound, detail: "note \(text) does not exist") }
                    return try JSON(UploadEnvelope(upload: Upload(attached.upload))).response(for: request)
                }
            }
        }
    }

    /// `HEAD /uploads/{id}`: a resumable upload's offset, or the head of `show`.
    @Sendable func head(_ request: Request, _ context: RequestContext) throws -> Reply {
        if let reply = try resumable.offset(request, context) { return reply }
        return try JSON(UploadEnvelope(upload: Upload(try existing(context)))).reply(for: request)
    }

    @Sendable func show(_ request: Request, _ context: RequestContext) throws -> Reply {
        try JSON(UploadEnvelope(upload: Upload(try existing(context)))).reply(for: request)
    }

    @Sendable func delete(_ request: Request, _ context: RequestContext) throws -> Reply {
        let store = store, owner = context.owner
        if let reply = try resumable.cancel(request, context) { return reply }
        let upload = try existing(context)
        return Reply.later { done in
            store.deleteUpload(id: upload.id, owner: owner) { result in
                done {
                    guard let removed = try result.get() else { throw HTTPError(.notFound, detail: "upload \(upload.id) does not exist") }
                    return try JSON(UploadEnvelope(upload: Upload(removed.upload))).response(for: request)
                }
            }
        }
    }

    @Sendable func content(_ request: Request, _ context: RequestContext) throws -> Reply {
        let upload = try existing(context)
        let etag = "\"\(upload.sha256)\""
        let headers = HTTPHeaders([
            ("Content-Type", upload.contentType), ("ETag", etag), ("Last-Modified", HTTPDate.format(upload.createdAt)), ("Accept-Ranges", "bytes"),
            ("Content-Disposition", UploadPolicy.disposition(for: upload)),
            ("Content-Security-Policy", "sandbox; default-src 'none'"),
        ])
        switch ReadCondition(request.headers, etag: etag, lastModified: upload.createdAt) {
        case .proceed: break
        case .notModified: return .now(Response(status: .notModified, headers: headers))
        case .failed(let detail): throw HTTPError(.preconditionFailed, detail: "upload \(upload.id): \(detail)")
        }
        // If-Range with another validator: the whole content.
        let rangeHeader = request.headers["If-Range"].map { $0 == etag } == false ? nil : request.headers["Range"]
        return try BlobResponse.make(
            store: store, key: UploadRecord.blobKey(upload.id), size: UInt64(upload.size),
            range: rangeHeader, headers: headers, what: "upload \(upload.id)")
    }

    private func existing(_ context: RequestContext) throws -> UploadRecord {
        let text = context.parameters[UploadInput.idField.name] ?? ""
        guard let id = UploadInput.idField.parse(text), let upload = try store.upload(id: id, owner: context.owner) else {
            throw HTTPError(.notFound, detail: "upload \(text) does not exist")
        }
        return upload
    }
}

enum ASCII {
    static func isHexLowercase(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
    }
}

/// What a stored file is served as.
enum UploadPolicy {
    /// Content types shown inline; everything else — HTML and SVG included — is an attachment,
    /// so an upload never runs as a page of this site.
    static let inlineTypes: Set<String> = ["image/png", "image/jpeg", "image/gif", "image/webp", "text/plain", "application/pdf"]

    /// The part's media type as stored: its lowercased essence, or octet-stream when unusable.
    /// Text (`text/*`) whose bytes are UTF-8 gets `; charset=utf-8`, so that browsers don't
    /// guess another encoding.
    static func contentType(_ contentType: String, isUTF8: Bool = false) -> String {
        guard let media = MediaType(contentType), media.essence.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return "application/octet-stream"
        }
        return isUTF8 && media.essence.hasPrefix("text/") ? media.essence + "; charset=utf-8" : media.essence
    }

    /// `inline` for the safe types, `attachment` otherwise, with the name in both forms.
    static func disposition(for upload: UploadRecord) -> String {
        let kind = inlineTypes.contains(MediaType(upload.contentType)?.essence ?? "") ? "inline" : "attachment"
        let ascii = String(upload.filename.unicodeScalars.map { $0.isASCII && $0 != "\"" && $0 != "\\" ? Character($0) : "_" })
        return "\(kind); filename=\"\(ascii)\"; filename*=UTF-8''\(FormFields.escape(upload.filename).replacing("+", with: "%20"))"
    }
}

extension Response {
    /// The `size` bytes of the open file `fd`: whole, or the single range a `Range` header asks
    /// for (`206` with `Content-Range`); a range outside them closes `fd` and throws `416`.
    static func ranged(fd: Int32, size: UInt64, range: String?, headers: HTTPHeaders, what: String) throws -> Response {
        do {
            return try ranged(size: size, range: range, headers: headers, what: what) { offset, length, status, headers in
                Response.file(fd: fd, offset: offset, length: length, status: status, headers: headers)
            }
        } catch {
            close(fd)
            throw error
        }
    }

    /// Whole, or the single range a `Range` header asks for (`206` with `Content-Range`), of
    /// `size` bytes: `make` gets the offset, length, status and headers; a range outside the
    /// bytes throws `416`.
    static func ranged(
        size: UInt64, range: String?, headers: HTTPHeaders, what: String,
        make: (_ offset: UInt64, _ length: UInt64, HTTPStatus, HTTPHeaders) throws -> Response
    ) throws -> Response {
        var headers = headers
        switch ByteRange(range, size: size) {
        case .full:
            return try make(0, size, .ok, headers)
        case .partial(let range):
            headers.add("Content-Range", "bytes \(range.lowerBound)-\(range.upperBound)/\(size)")
            return try make(range.lowerBound, range.upperBound - range.lowerBound + 1, HTTPStatus(206), headers)
        case .unsatisfiable:
            throw HTTPError(
                HTTPStatus(416), detail: "the range is outside the \(size) bytes of \(what)",
                headers: HTTPHeaders([("Content-Range", "bytes */\(size)")]))
        }
    }
}
