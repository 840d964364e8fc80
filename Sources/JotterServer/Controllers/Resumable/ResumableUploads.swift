import Glibc
import JotterAPI
import JotterBlobs
import JotterHTTP
import JotterStore
import JotterStoreHTTP
import JotterSystem

/// Raw-body and resumable uploads on `/uploads`: the IETF draft (interop versions 3 to 8) and
/// tus 1.0 over one upload resource, `/uploads/{id}`, whose state is a `partial_uploads` row
/// and whose bytes so far are kept by a `PartialStorage` — a file in `<data>/partial/` on the
/// data folder, an S3 multipart upload (its state in PostgreSQL) with a bucket — so a restart,
/// or another instance, resumes them. Complete, the upload becomes an ordinary one with the
/// same id (its bytes in the blob store under `uploads/<id>`).
///
/// Every request is authenticated in its head phase, before any byte is read; another user's
/// upload is `404`. What a request needs of the store runs on its route's executor, before
/// its body is read (the routes that take bytes run on the store's threads).
final class ResumableUploads: Sendable {
    struct Limits: Sendable {
        /// The largest upload (`--max-upload-size`): `Upload-Limit: max-size`, `Tus-Max-Size`.
        var maxSize: Int64
        /// Seconds a partial upload lives after its last append (`max-age`, `Upload-Expires`).
        var lifetime: Int64
        /// Partial uploads one user may have at once.
        var perUser: Int
        /// Bytes one user's partial uploads may declare or hold together.
        var bytesPerUser: Int64
    }

    let store: any DataStore
    let storage: any PartialStorage
    let limits: Limits
    let secure: Bool

    init(store: any DataStore, dataDirectory: String, limits: Limits, secure: Bool) throws {
        self.store = store
        storage = try store.partialStorage(dataDirectory: dataDirectory, lifetime: limits.lifetime)
        self.limits = limits
        self.secure = secure
    }

    // MARK: - Body policies

    /// `POST /uploads` with a body that is not multipart: a raw upload, resumable when the
    /// draft's fields or `Tus-Resumable` say so. No limit of its own (nor has `append`): the
    /// server's `--max-upload-size`, which is `limits.maxSize`, bounds it, and a refusal names it.
    var creation: BodyPolicy { .stream { [self] head, context in try openCreation(head, context) } }

    /// `PATCH /uploads/{id}` that appends (the draft's or tus's fields).
    var append: BodyPolicy { .stream { [self] head, context in try openAppend(head, context) } }

    /// Whether a PATCH appends bytes (rather than attaching the upload to a note).
    static func isAppend(_ head: RequestHead) -> Bool {
        let media = head.headers["Content-Type"].flatMap(MediaType.init)?.essence
        return media == "application/partial-upload" || media == "application/offset+octet-stream"
            || UploadDialect.of(head.headers) != .raw
    }

    /// The receiver of a request whose store work is done (`writer`: a resumable one's bytes);
    /// a request that ends without its whole body keeps what arrived (none of it when it was
    /// tentative), on a store thread.
    private func receiver(
        _ plan: UploadReceiver.Plan, _ context: RequestContext, writer: (any PartialWriter)?,
        rawFile: String? = nil
    ) throws -> UploadReceiver {
        let threads = store.threads, lifetime = limits.lifetime
        let storage = storage, owner = context.owner
        return try UploadReceiver(plan: plan, owner: owner, context: context, writer: writer, rawFile: rawFile) { receiver in
            guard let writer = receiver.writer else { return }
            let length = receiver.plan.length, tentative = receiver.isTentative
            guard receiver.plan.keptIfCut || receiver.plan.record == nil else {
                // A one-shot upload let past the user's limits lives only as long as its request.
                let id = receiver.plan.record!.id
                threads.run { _ = try? storage.cancel(id, owner: owner) }
                return
            }
            threads.run { _ = try? writer.keep(length: length, expiresAt: WallClock.seconds() + lifetime, discarding: tentative) }
        }
    }

    // MARK: - Creation

    /// On the route's executor: the store work is done here, before any byte of the body.
    private func openCreation(_ head: RequestHead, _ context: RequestContext) throws -> UploadReceiver {
        let dialect = UploadDialect.of(head.headers)
        let owner = context.owner
        let headers = head.headers
        let media = headers["Content-Type"].flatMap(MediaType.init)
        let disposition = try headers["Content-Disposition"].flatMap { header throws(HTTPError) in try ContentDisposition.filename(header) }
        let noteID = try UploadInput.noteField(try head.query()["note_id"] ?? "")
        func plainType() -> String { UploadPolicy.contentType(headers["Content-Type"] ?? "application/octet-stream") }

        switch dialect {
        case .raw:
            guard let filename = disposition, media?.essence != "application/x-www-form-urlencoded" else {
                throw HTTPError(
                    .unsupportedMediaType,
                    detail: "send the files as multipart/form-data, or one file's bytes with Content-Disposition: attachment; filename=…")
            }
            let plan = UploadReceiver.Plan(
                dialect: .raw, record: nil, startOffset: 0, length: head.declaredLength, completes: true, checksum: nil,
                creates: true, filename: filename, contentType: plainType(), noteID: noteID)
            try requireNote(noteID, owner: owner)
            return try receiver(plan, context, writer: nil, rawFile: store.temporaryDirectory + "/raw-" + UploadRecord.newID())

        case .tus:
            try Self.checkTusVersion(headers)
            guard let lengthText = headers["Upload-Length"], let length = Int64(lengthText), length >= 0 else {
                throw tusError(
                    .badRequest,
                    headers["Upload-Defer-Length"] != nil
                        ? "Upload-Defer-Length is not supported: send Upload-Length" : "Upload-Length (a non-negative integer) is required")
            }
            guard length <= limits.maxSize else {
                throw tusError(
                    .contentTooLarge, "Upload-Length \(length) is larger than the limit of \(limits.maxSize) bytes (--max-upload-size)",
                    extra: [("Tus-Max-Size", String(limits.maxSize))])
            }
            if head.hasBody, media?.essence != "application/offset+octet-stream" {
                throw tusError(.unsupportedMediaType, "a creation-with-upload body must be application/offset+octet-stream")
            }
            // Kept as sent, for every HEAD to answer (tus 1.0: "exactly"); its length is
            // bounded by the request-head limit (6,500 bytes, the engine's `431`).
            let sentMetadata = headers["Upload-Metadata"].flatMap { $0.isEmpty ? nil : $0 }
            let metadata = try Tus.metadata(sentMetadata)
            let filename = cleanFilename(metadata["filename"] ?? metadata["name"] ?? "upload")
            let type = UploadPolicy.contentType(metadata["filetype"] ?? metadata["type"] ?? "application/octet-stream")
            let checksum = try Tus.checksum(headers["Upload-Checksum"])
            try requireNote(noteID, owner: owner)
            let (record, writer, _) = try createRecord(
                dialect: .tus, filename: filename, contentType: type, length: length, noteID: noteID,
                expectedSHA256: nil, owner: owner, tentative: checksum != nil, tusMetadata: sentMetadata)
            let plan = UploadReceiver.Plan(
                dialect: .tus, record: record, startOffset: 0, length: length, completes: false,
                checksum: checksum, creates: true, filename: filename, contentType: type, noteID: noteID)
            return try receiver(plan, context, writer: writer)

        case .ietf(let version):
            let rules = DraftRules(sent: version)
            guard let complete = rules.isComplete(headers) else {
                throw HTTPError.badRequest(
                    "a resumable upload's creation needs \(rules.usesIncomplete ? "Upload-Incomplete" : "Upload-Complete") (a Structured Fields boolean)"
                )
            }
            let length = try declaredLength(headers, complete: complete, offset: 0, contentLength: head.declaredLength, rules: rules)
            if let length, length > limits.maxSize {
                throw HTTPError(
                    .contentTooLarge, detail: "the upload's \(length) bytes are more than the limit of \(limits.maxSize) bytes (--max-upload-size)",
                    headers: draftHeaders(rules, complete: false, expiresAt: nil), closesConnection: true)
            }
            let expected = try Self.reprDigest(headers)
            try requireNote(noteID, owner: owner)
            let (record, writer, withinLimits) = try createRecord(
                dialect: dialect, filename: disposition ?? "upload", contentType: plainType(), length: length,
                noteID: noteID, expectedSHA256: expected, owner: owner, tentative: false, complete: complete)
            var plan = UploadReceiver.Plan(
                dialect: dialect, record: record, startOffset: 0, length: length, completes: complete,
                checksum: nil, creates: true, filename: record.filename, contentType: record.contentType, noteID: noteID)
            plan.keptIfCut = withinLimits
            // The request holds the upload before the client learns where it is: a HEAD right
            // after the 104 takes it over, never the other way round.
            let made = try receiver(plan, context, writer: writer)
            if rules.sendsInterim {
                var interim = HTTPHeaders([("Location", location(record.id, head)), ("Upload-Draft-Interop-Version", String(rules.version))])
                if let limit = rules.limit(maxSize: limits.maxSize, remainingSeconds: limits.lifetime) { interim.add("Upload-Limit", limit) }
                context.sendInterim(.uploadResumptionSupported, headers: interim)
            }
            return made
        }
    }

    private func requireNote(_ noteID: Int64?, owner: Owner) throws {
        guard let noteID else { return }
        guard try store.note(id: noteID, owner: owner) != nil else { throw HTTPError(.notFound, detail: "note \(noteID) does not exist") }
    }

    /// The row and the storage of a new partial upload, within the user's limits — or, when it
    /// is `complete` (a one-shot upload: its request ends it), past them, and then it lives
    /// only as long as its request (`withinLimits` false: cancelled if cut, never resumable).
    private func createRecord(
        dialect: UploadDialect, filename: String, contentType: String, length: Int64?, noteID: Int64?,
        expectedSHA256: String?, owner: Owner, tentative: Bool, complete: Bool = false, tusMetadata: String? = nil
    ) throws -> (PartialUploadRecord, any PartialWriter, withinLimits: Bool) {
        let withinLimits = try checkLimits(length: length, owner: owner, refusing: !complete)
        let now = WallClock.seconds()
        let record = PartialUploadRecord(
            id: UploadRecord.newID(), protocolName: dialect.storedName, filename: filename, contentType: contentType,
            length: length, offset: 0, noteID: noteID, expectedSHA256: expectedSHA256, createdAt: now,
            expiresAt: now + limits.lifetime, tusMetadata: tusMetadata)
        let made = try storage.create(record, owner: owner, tentative: tentative)
        return (made.record, made.writer, withinLimits)
    }

    /// Whether one more unfinished upload of `length` bytes fits `owner`'s limits; when it does
    /// not and `refusing`, `429` (with `Retry-After`: when the first of theirs expires unless
    /// appended to, at most the lifetime) or, for an upload larger than the bytes one user's
    /// unfinished uploads may hold, `413`: waiting can't help it.
    private func checkLimits(length: Int64?, owner: Owner, refusing: Bool) throws -> Bool {
        let usage = try store.partialUploadUsage(owner: owner)
        let fits = usage.count < limits.perUser && usage.bytes + (length ?? 0) <= limits.bytesPerUser
        guard !fits, refusing else { return fits }
        if let length, length > limits.bytesPerUser {
            throw HTTPError(
                .contentTooLarge,
                detail:
                    "an unfinished upload of \(length) bytes is more than the \(limits.bytesPerUser) bytes one user's unfinished uploads may hold: send it whole (Upload-Complete: ?1) or in a smaller upload",
                closesConnection: true)
        }
        let wait = max(1, min(limits.lifetime, (usage.firstExpiry ?? 0) - WallClock.seconds()))
        let later = "finish or cancel some (DELETE /uploads/{id}), or retry once one expires (the first in \(wait) s)"
        let detail =
            usage.count >= limits.perUser
            ? "you have \(usage.count) unfinished resumable uploads, the most one user may have: \(later)"
            : "your unfinished resumable uploads hold \(usage.bytes) bytes; with this one they would pass the limit of \(limits.bytesPerUser): \(later)"
        throw HTTPError(HTTPStatus(429), detail: detail, headers: HTTPHeaders([("Retry-After", String(wait))]), closesConnection: true)
    }

    // MARK: - Append

    /// On the route's executor: takes the upload over for an append and checks the request
    /// against it, before any byte of the body.
    private func openAppend(_ head: RequestHead, _ context: RequestContext) throws -> UploadReceiver {
        let id = try Self.uploadID(head)
        let owner = context.owner
        let headers = head.headers
        let tentative = UploadDialect.of(headers) == .tus && headers["Upload-Checksum"] != nil
        switch try storage.takeOver(id, owner: owner, appending: true, tentative: tentative) {
        case .missing:
            if try store.upload(id: id, owner: owner) != nil { throw completedError(id, head) }
            throw HTTPError(.notFound, detail: "upload \(id) does not exist", closesConnection: head.hasBody)
        case .completing:
            // Completing right now, or cancelled: say which once the rows tell.
            if try awaitCompletion(id, owner: owner) != nil { throw completedError(id, head) }
            throw HTTPError(.notFound, detail: "upload \(id) does not exist", closesConnection: head.hasBody)
        case .held(let record, let offset, let writer):
            guard let writer else { throw HTTPError(.internalServerError) }
            do {
                return try receiver(try appendPlan(head, record: record, offset: offset), context, writer: writer)
            } catch {
                // Refused: the upload stays as it was.
                writer.release()
                throw error
            }
        }
    }

    /// What an append carries, or why it is refused, for the upload at `offset`.
    private func appendPlan(_ head: RequestHead, record: PartialUploadRecord, offset: Int64) throws -> UploadReceiver.Plan {
        let headers = head.headers
        let media = headers["Content-Type"].flatMap(MediaType.init)?.essence
        var dialect = UploadDialect.of(headers)
        if dialect == .raw { dialect = UploadDialect(storedName: record.protocolName) }
        let provided = headers["Upload-Offset"].flatMap { StructuredField.item($0)?.integer }
        switch dialect {
        case .tus:
            try Self.checkTusVersion(headers)
            guard media == "application/offset+octet-stream" else {
                throw tusError(.unsupportedMediaType, "a tus PATCH must be application/offset+octet-stream")
            }
            guard let provided, provided >= 0 else { throw tusError(.badRequest, "Upload-Offset (a non-negative integer) is required") }
            guard provided == offset else {
                throw tusError(
                    HTTPStatus(409), "Upload-Offset \(provided) is not the upload's offset \(offset)", extra: [("Upload-Offset", String(offset))])
            }
            return UploadReceiver.Plan(
                dialect: .tus, record: record, startOffset: offset, length: record.length, completes: false,
                checksum: try Tus.checksum(headers["Upload-Checksum"]), creates: false,
                filename: record.filename, contentType: record.contentType, noteID: record.noteID)
        case .ietf(let version):
            let rules = DraftRules(sent: version)
            let (completeName, _) = rules.completeness(false)
            if rules.requiresPartialUploadType, media != "application/partial-upload" {
                throw HTTPError(
                    .unsupportedMediaType, detail: "an append must be application/partial-upload",
                    headers: HTTPHeaders([rules.completeness(false)]), closesConnection: head.hasBody)
            }
            guard let complete = rules.isComplete(headers) else {
                throw HTTPError(.badRequest, detail: "an append needs \(completeName) (a Structured Fields boolean)", closesConnection: head.hasBody)
            }
            guard let provided, provided >= 0 else {
                throw HTTPError(.badRequest, detail: "an append needs Upload-Offset (a Structured Fields integer)", closesConnection: head.hasBody)
            }
            guard provided == offset else {
                var error = HTTPError(
                    HTTPStatus(409), detail: "Upload-Offset \(provided) is not the upload's offset \(offset): append from \(offset)",
                    headers: HTTPHeaders([("Upload-Offset", String(offset)), rules.completeness(false)]),
                    closesConnection: head.hasBody)
                error.type = rules.problemType("mismatching-upload-offset")
                error.integerMembers = ["expected-offset": offset, "provided-offset": provided]
                throw error
            }
            let length = try declaredLength(
                headers, complete: complete, offset: offset, contentLength: head.declaredLength, rules: rules,
                recorded: record.length)
            let digest = try Self.reprDigest(headers)
            if let digest, let known = record.expectedSHA256, digest != known {
                throw HTTPError(.badRequest, detail: "Repr-Digest differs from the one the upload was created with", closesConnection: head.hasBody)
            }
            return UploadReceiver.Plan(
                dialect: dialect, record: record, startOffset: offset, length: length ?? record.length,
                completes: complete, checksum: nil, creates: false,
                filename: record.filename, contentType: record.contentType, noteID: record.noteID,
                reprDigest: record.expectedSHA256 == nil ? digest : nil)
        case .raw:
            throw HTTPError(.badRequest, detail: "an append needs the resumable-upload fields", closesConnection: head.hasBody)
        }
    }

    /// The length a request declares (`Upload-Length`, or the offset plus `Content-Length` of a
    /// completing request), checked against itself and what was recorded.
    private func declaredLength(
        _ headers: HTTPHeaders, complete: Bool, offset: Int64, contentLength: Int64?, rules: DraftRules,
        recorded: Int64? = nil
    ) throws -> Int64? {
        let field = headers["Upload-Length"].flatMap { StructuredField.item($0)?.integer }
        let implied = complete ? contentLength.map { offset + $0 } : nil
        let lengths = [field, implied, recorded].compactMap { $0 }
        guard Set(lengths).count <= 1 else {
            var error = HTTPError(
                rules.version >= 7 ? .badRequest : HTTPStatus(409), detail: "the upload's length values disagree",
                headers: HTTPHeaders([rules.completeness(false)]), closesConnection: true)
            error.type = rules.version >= 7 ? rules.problemType("inconsistent-upload-length") : "about:blank"
            throw error
        }
        return field ?? implied ?? recorded
    }

    // MARK: - After the body

    /// The answer once an upload request's body has arrived whole, on the route's executor (the
    /// store's threads): keeping or completing the upload waits on disk, database or bucket.
    func finish(_ request: Request, _ context: RequestContext, receiver: UploadReceiver) throws -> Reply {
        .now(try afterBody(request, receiver: receiver))
    }

    private func afterBody(_ request: Request, receiver: UploadReceiver) throws -> Response {
        let plan = receiver.plan
        guard let record = plan.record, let writer = receiver.writer else { return try storeRaw(request, receiver: receiver) }
        let complete: Bool
        switch plan.dialect {
        case .tus: complete = receiver.offset == record.length
        default: complete = plan.completes
        }
        if complete { return try completeUpload(request, receiver: receiver, record: record, writer: writer) }
        // More to come: the row learns the offset, then the answer.
        let expiresAt = WallClock.seconds() + limits.lifetime
        guard try writer.keep(length: plan.length, expiresAt: expiresAt, discarding: false) else {
            if try store.partialUpload(id: record.id, owner: receiver.owner) == nil {
                throw HTTPError(.notFound, detail: "upload \(record.id) was cancelled meanwhile")
            }
            throw HTTPError.takenOver(record.id)
        }
        let status: HTTPStatus =
            plan.creates
            ? .created
            : {
                if case .ietf(let version) = plan.dialect, DraftRules(sent: version).version <= 5 { return .created }
                return .noContent
            }()
        return Response(
            status: status, headers: progressHeaders(plan, record: record, request: request, offset: receiver.offset, expiresAt: expiresAt))
    }

    private func progressHeaders(_ plan: UploadReceiver.Plan, record: PartialUploadRecord, request: Request, offset: Int64, expiresAt: Int64)
        -> HTTPHeaders
    {
        var headers = HTTPHeaders([("Upload-Offset", String(offset))])
        if plan.creates { headers.add("Location", location(record.id, request.head)) }
        switch plan.dialect {
        case .tus:
            headers.add("Tus-Resumable", UploadDialect.tusVersion)
            headers.add("Upload-Expires", HTTPDate.format(expiresAt))
        case .ietf(let version):
            let rules = DraftRules(sent: version)
            headers.add(rules.completeness(false).0, rules.completeness(false).1)
            if let limit = rules.limit(maxSize: limits.maxSize, remainingSeconds: expiresAt - WallClock.seconds()) {
                headers.add("Upload-Limit", limit)
            }
        case .raw: break
        }
        return headers
    }

    /// Checks the upload's length, makes its bytes the object `uploads/<id>` (their SHA-256
    /// checked against `Repr-Digest`) and replaces its row by the ordinary upload: what
    /// `POST /uploads` answers.
    private func completeUpload(_ request: Request, receiver: UploadReceiver, record: PartialUploadRecord, writer: any PartialWriter) throws
        -> Response
    {
        let store = store, owner = receiver.owner, plan = receiver.plan, length = receiver.offset
        if let declared = plan.length, declared != length {
            // What arrived is kept: the client may append the rest.
            _ = try? writer.keep(length: plan.length, expiresAt: WallClock.seconds() + limits.lifetime, discarding: false)
            throw completionError(plan, status: .badRequest, "the upload ends at \(length) bytes, not at its declared length of \(declared)")
        }
        let sha256: String
        do {
            // The creation's Repr-Digest, else the completing request's (RFC 9530: either
            // describes the whole representation).
            sha256 = try writer.complete(length: length, expected: record.expectedSHA256 ?? plan.reprDigest)
        } catch let mismatch as PartialDigestMismatch {
            // Nothing half-stored: the upload is gone.
            _ = try? store.deletePartialUpload(id: record.id, owner: owner)
            throw completionError(
                plan, status: .badRequest, "the upload's SHA-256 is \(mismatch.actual), not the one Repr-Digest gave: it was discarded")
        }
        let upload = NewUpload(id: record.id, filename: record.filename, contentType: record.contentType, size: length, sha256: sha256)
        guard let added = try store.completePartialUpload(upload, owner: owner) else {
            try? store.blobs.delete(UploadRecord.blobKey(record.id))
            throw HTTPError(.notFound, detail: "upload \(record.id) was cancelled meanwhile")
        }
        return try Self.created(
            added, request: request, headers: completionHeaders(plan, record: record, request: request, length: length),
            noContent: plan.dialect == .tus && !plan.creates)
    }

    private func completionHeaders(_ plan: UploadReceiver.Plan, record: PartialUploadRecord, request: Request, length: Int64) -> HTTPHeaders {
        var headers = HTTPHeaders([("Upload-Offset", String(length)), ("Location", location(record.id, request.head))])
        switch plan.dialect {
        case .tus: headers.add("Tus-Resumable", UploadDialect.tusVersion)
        case .ietf(let version): let field = DraftRules(sent: version).completeness(true); headers.add(field.0, field.1)
        case .raw: break
        }
        return headers
    }

    private func completionError(_ plan: UploadReceiver.Plan, status: HTTPStatus, _ detail: String) -> HTTPError {
        var headers = HTTPHeaders()
        if case .ietf(let version) = plan.dialect {
            headers.add(DraftRules(sent: version).completeness(true).0, DraftRules(sent: version).completeness(true).1)
        }
        if plan.dialect == .tus { headers.add("Tus-Resumable", UploadDialect.tusVersion) }
        return HTTPError(status, detail: detail, headers: headers)
    }

    /// What `POST /uploads` answers for stored uploads (tus: `204` for the PATCH that ended it).
    static func created(_ added: UploadsAdded, request: Request, headers: HTTPHeaders, noContent: Bool) throws -> Response {
        if noContent { return Response(status: .noContent, headers: headers) }
        var response = try JSON(UploadList(uploads: added.uploads.map(Upload.init)), status: .created).response(for: request)
        for field in headers { response.headers.add(field.name, field.value) }
        return response
    }

    /// A plain raw upload: its bytes into the blob store, then its row.
    private func storeRaw(_ request: Request, receiver: UploadReceiver) throws -> Response {
        let plan = receiver.plan
        // Whatever happens, nothing of the request stays in tmp/ (a no-op once the file moved).
        defer { receiver.discardFile() }
        guard let sha256 = receiver.sha256, let path = receiver.path else { throw HTTPError(.internalServerError) }
        let upload = NewUpload(
            id: UploadRecord.newID(), filename: plan.filename, contentType: plan.contentType, size: receiver.offset, sha256: sha256)
        do { try store.blobs.put(UploadRecord.blobKey(upload.id), movingFile: path) } catch {
            try? store.blobs.delete(UploadRecord.blobKey(upload.id))
            throw error
        }
        receiver.fileMoved()
        let added: UploadsAdded?
        do { added = try store.addUploads([upload], noteID: plan.noteID, owner: receiver.owner) } catch {
            try? store.blobs.delete(UploadRecord.blobKey(upload.id))
            throw error
        }
        guard let added else {
            // The note went meanwhile: no row, so no bytes either.
            try? store.blobs.delete(UploadRecord.blobKey(upload.id))
            throw HTTPError(.notFound, detail: "note \(plan.noteID.map(String.init) ?? "") does not exist")
        }
        return try JSON(UploadList(uploads: added.uploads.map(Upload.init)), status: .created).response(for: request)
    }

    // MARK: - Offset, cancel, options

    /// `HEAD /uploads/{id}` in either protocol: the offset (taking the upload over from any
    /// request still appending). nil: not a resumable-upload request (neither tus's
    /// `Tus-Resumable` nor the draft's fields), which is the head of `GET /uploads/{id}` — an
    /// unfinished upload is `404` there, and a plain HEAD takes nothing over.
    /// Blocks: on the route's executor (the loop only with the data folder and SQLite).
    func offset(_ request: Request, _ context: RequestContext) throws -> Reply? {
        let dialect = UploadDialect.of(request.headers)
        guard dialect != .raw else { return nil }
        let id = try Self.uploadID(request.head)
        let owner = context.owner
        if dialect == .tus { try Self.checkTusVersion(request.headers) }
        func completed(_ upload: UploadRecord) throws -> Reply {
            let metadata = dialect == .tus ? try store.uploadMetadata(id: id, owner: owner) : nil
            return .now(
                offsetResponse(dialect, id: id, offset: upload.size, length: upload.size, complete: true, expiresAt: nil, metadata: metadata))
        }
        switch try storage.takeOver(id, owner: owner, appending: false, tentative: false) {
        case .missing:
            guard let upload = try store.upload(id: id, owner: owner) else { throw HTTPError(.notFound, detail: "upload \(id) does not exist") }
            return try completed(upload)
        case .completing:
            // Completing right now (its bytes moved, its row not replaced yet): wait for the row.
            guard let upload = try awaitCompletion(id, owner: owner) else { throw HTTPError(.notFound, detail: "upload \(id) does not exist") }
            return try completed(upload)
        case .held(let record, let offset, _):
            if dialect == .tus, offset == record.length {
                // The request it took over had stored every byte but had not completed the upload:
                // it is complete now, by tus's rule, so whoever learns it completes it.
                guard let upload = try completeTaken(id, owner: owner) else { throw HTTPError(.notFound, detail: "upload \(id) does not exist") }
                return try completed(upload)
            }
            return .now(
                offsetResponse(
                    dialect, id: id, offset: offset, length: record.length, complete: false, expiresAt: record.expiresAt,
                    metadata: record.tusMetadata))
        }
    }

    /// Completes a tus upload whose bytes reached its length when a request took it over (the
    /// request that stored them was stopped before it completed it): the upload, or nil when it
    /// went meanwhile (cancelled, or its bytes did not have the expected digest).
    private func completeTaken(_ id: String, owner: Owner) throws -> UploadRecord? {
        switch try storage.takeOver(id, owner: owner, appending: true, tentative: false) {
        case .missing:
            return try store.upload(id: id, owner: owner)
        case .completing:
            return try awaitCompletion(id, owner: owner)
        case .held(let record, let offset, let writer):
            guard let writer else { throw HTTPError(.internalServerError) }
            guard offset == record.length else {
                // Another request appended or cut meanwhile: it carries on from there.
                writer.release()
                return nil
            }
            let sha256: String
            do {
                sha256 = try writer.complete(length: offset, expected: record.expectedSHA256)
            } catch is PartialDigestMismatch {
                _ = try? store.deletePartialUpload(id: record.id, owner: owner)
                return nil
            }
            let upload = NewUpload(id: record.id, filename: record.filename, contentType: record.contentType, size: offset, sha256: sha256)
            guard let added = try store.completePartialUpload(upload, owner: owner) else {
                try? store.blobs.delete(UploadRecord.blobKey(record.id))
                return nil
            }
            return try added.uploads.first { $0.id == id } ?? store.upload(id: id, owner: owner)
        }
    }

    /// Waits (up to 5 s) for an upload being completed to be an ordinary upload: it, or nil
    /// when its partial row went without one (cancelled). Still completing after that: `503`.
    private func awaitCompletion(_ id: String, owner: Owner) throws -> UploadRecord? {
        for _ in 0..<500 {
            if let upload = try store.upload(id: id, owner: owner) { return upload }
            guard try store.partialUpload(id: id, owner: owner) != nil else { return nil }
            usleep(10_000)
        }
        throw HTTPError(
            .serviceUnavailable, detail: "upload \(id) is being completed: ask again shortly",
            headers: HTTPHeaders([("Retry-After", "1")]))
    }

    private func offsetResponse(
        _ dialect: UploadDialect, id: String, offset: Int64, length: Int64?, complete: Bool, expiresAt: Int64?,
        metadata: String?
    ) -> Response {
        var headers = HTTPHeaders([("Upload-Offset", String(offset)), ("Cache-Control", "no-store")])
        if let length { headers.add("Upload-Length", String(length)) }
        switch dialect {
        case .tus:
            headers.add("Tus-Resumable", UploadDialect.tusVersion)
            if length == nil { headers.add("Upload-Defer-Length", "1") }
            if let expiresAt { headers.add("Upload-Expires", HTTPDate.format(expiresAt)) }
            // Exactly what the creation request sent; nothing when it sent none.
            if let metadata { headers.add("Upload-Metadata", metadata) }
            return Response(status: .ok, headers: headers)
        case .ietf(let version):
            let rules = DraftRules(sent: version)
            let field = rules.completeness(complete)
            headers.add(field.0, field.1)
            if let limit = rules.limit(maxSize: limits.maxSize, remainingSeconds: (expiresAt ?? WallClock.seconds()) - WallClock.seconds()) {
                headers.add("Upload-Limit", limit)
            }
            return Response(status: .noContent, headers: headers)
        case .raw:
            let field = DraftRules(sent: nil).completeness(complete)
            headers.add(field.0, field.1)
            return Response(status: .noContent, headers: headers)
        }
    }

    /// `DELETE /uploads/{id}` of a partial upload: stops any request appending, deletes its
    /// bytes and row (`204`). nil: no partial upload has this id (an ordinary delete follows).
    /// Blocks: on the route's executor (the loop only with the data folder and SQLite).
    func cancel(_ request: Request, _ context: RequestContext) throws -> Reply? {
        let id = try Self.uploadID(request.head)
        if UploadDialect.of(request.headers) == .tus { try Self.checkTusVersion(request.headers) }
        guard try storage.cancel(id, owner: context.owner) else { return nil }
        let tus = request.headers["Tus-Resumable"] != nil
        return .now(Response(status: .noContent, headers: tus ? HTTPHeaders([("Tus-Resumable", UploadDialect.tusVersion)]) : HTTPHeaders()))
    }

    /// `OPTIONS /uploads`: the limits, in both protocols' fields.
    func options(_ request: Request, _ context: RequestContext) -> Response {
        var headers = HTTPHeaders([
            ("Allow", "GET, HEAD, OPTIONS, POST"),
            ("Tus-Resumable", UploadDialect.tusVersion), ("Tus-Version", UploadDialect.tusVersion), ("Tus-Extension", Tus.extensions),
            ("Tus-Max-Size", String(limits.maxSize)), ("Tus-Checksum-Algorithm", Tus.checksumAlgorithms),
        ])
        let version = request.headers["Upload-Draft-Interop-Version"].flatMap { StructuredField.item($0)?.integer }.map(Int.init)
        let rules = DraftRules(sent: version.flatMap { UploadDialect.interopVersions.contains($0) ? $0 : nil })
        headers.add(
            "Upload-Limit",
            rules.limit(maxSize: limits.maxSize, remainingSeconds: limits.lifetime)
                ?? "max-size=\(limits.maxSize), max-age=\(limits.lifetime)")
        return Response(status: .noContent, headers: headers)
    }

    // MARK: - Expiry

    /// Deletes partial uploads past their lifetime (rows and bytes), and bytes no row names;
    /// how many.
    @discardableResult
    func sweep(now: Int64) -> Int {
        var removed = 0
        while let expired = try? store.expiredPartialUploads(now: now, limit: 100), !expired.isEmpty {
            for (record, owner) in expired {
                storage.expire(record, owner: owner)
                removed += 1
            }
            if expired.count < 100 { break }
        }
        return removed + storage.sweepLeftovers(now: now, lifetime: limits.lifetime)
    }

    // MARK: - Helpers

    static func uploadID(_ head: RequestHead) throws(HTTPError) -> String {
        let path = head.path
        let id = path.split(separator: "/").last.map(String.init) ?? ""
        guard UploadInput.isUploadID(id) else {
            throw HTTPError(.notFound, detail: "upload \(printable(id)) does not exist", closesConnection: head.hasBody)
        }
        return id
    }

    /// `/uploads/{id}`, absolute when the request named its host.
    func location(_ id: String, _ head: RequestHead) -> String {
        let path = "/uploads/" + id
        guard let host = head.authority, !host.isEmpty, host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") }) else {
            return path
        }
        return (secure ? "https://" : "http://") + host + path
    }

    static func checkTusVersion(_ headers: HTTPHeaders) throws(HTTPError) {
        guard headers["Tus-Resumable"] == UploadDialect.tusVersion else {
            throw HTTPError(
                .preconditionFailed, detail: "this server speaks tus \(UploadDialect.tusVersion)",
                headers: HTTPHeaders([("Tus-Version", UploadDialect.tusVersion), ("Tus-Resumable", UploadDialect.tusVersion)]),
                closesConnection: true)
        }
    }

    private func tusError(_ status: HTTPStatus, _ detail: String, extra: [(String, String)] = []) -> HTTPError {
        HTTPError(status, detail: detail, headers: HTTPHeaders([("Tus-Resumable", UploadDialect.tusVersion)] + extra), closesConnection: true)
    }

    private func completedError(_ id: String, _ head: RequestHead) -> HTTPError {
        let dialect = UploadDialect.of(head.headers)
        if dialect == .tus { return tusError(.forbidden, "upload \(id) is complete") }
        let rules: DraftRules
        if case .ietf(let version) = dialect { rules = DraftRules(sent: version) } else { rules = DraftRules(sent: nil) }
        var error = HTTPError(
            .badRequest, detail: "upload \(id) is complete: nothing can be appended",
            headers: HTTPHeaders([rules.completeness(true)]), closesConnection: head.hasBody)
        error.type = rules.problemType("completed-upload")
        return error
    }

    private func draftHeaders(_ rules: DraftRules, complete: Bool, expiresAt: Int64?) -> HTTPHeaders {
        var headers = HTTPHeaders([rules.completeness(complete)])
        if let limit = rules.limit(
            maxSize: limits.maxSize, remainingSeconds: (expiresAt ?? WallClock.seconds() + limits.lifetime) - WallClock.seconds())
        {
            headers.add("Upload-Limit", limit)
        }
        return headers
    }

    /// `Repr-Digest`'s sha-256 as lowercase hex; nil when absent or without sha-256.
    static func reprDigest(_ headers: HTTPHeaders) throws(HTTPError) -> String? {
        guard let header = headers["Repr-Digest"] else { return nil }
        guard let members = StructuredField.dictionary(header) else {
            throw HTTPError.badRequest("Repr-Digest is not a Structured Fields dictionary")
        }
        guard let member = members.first(where: { $0.key == "sha-256" }) else { return nil }
        guard let bytes = member.value.bytes, bytes.count == 32 else { throw HTTPError.badRequest("Repr-Digest's sha-256 is not 32 bytes") }
        let hex = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 0xF)]] }, as: UTF8.self)
    }
}
