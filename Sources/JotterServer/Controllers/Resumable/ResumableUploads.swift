import Glibc
import JotterAPI
import JotterBlobs
import JotterHTTP
import JotterStore

/// Raw-body and resumable uploads on `/uploads`: the IETF draft (interop versions 3 to 8) and
/// tus 1.0 over one upload resource, `/uploads/{id}`, whose partial bytes are a file in
/// `<data>/partial/` and whose state is a `partial_uploads` row — so a restart resumes them.
/// Complete, the upload becomes an ordinary one with the same id (its bytes moved into the
/// blob store: renamed on the data folder, sent to the bucket otherwise).
///
/// Every request is authenticated in its head phase, before any byte is read; another user's
/// upload is `404`.
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
    let files: PartialFiles
    let limits: Limits
    let secure: Bool

    init(store: any DataStore, dataDirectory: String, limits: Limits, secure: Bool) throws {
        self.store = store
        files = try PartialFiles(directory: dataDirectory + "/partial")
        self.limits = limits
        self.secure = secure
    }

    // MARK: - Body policies

    /// `POST /uploads` with a body that is not multipart: a raw upload, resumable when the
    /// draft's fields or `Tus-Resumable` say so.
    var creation: BodyPolicy { .stream(limit: limits.maxSize) { [self] head, context in try openCreation(head, context) } }

    /// `PATCH /uploads/{id}` that appends (the draft's or tus's fields).
    var append: BodyPolicy { .stream(limit: limits.maxSize) { [self] head, context in try openAppend(head, context) } }

    /// Whether a PATCH appends bytes (rather than attaching the upload to a note).
    static func isAppend(_ head: RequestHead) -> Bool {
        let media = head.headers["Content-Type"].flatMap(MediaType.init)?.essence
        return media == "application/partial-upload" || media == "application/offset+octet-stream"
            || UploadDialect.of(head.headers) != .raw
    }

    // MARK: - Creation

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
                throw HTTPError(.unsupportedMediaType, detail: "send the files as multipart/form-data, or one file's bytes with Content-Disposition: attachment; filename=…")
            }
            try requireNote(noteID, owner: owner)
            let plan = UploadReceiver.Plan(dialect: .raw, record: nil, startOffset: 0, length: head.declaredLength, completes: true, checksum: nil,
                                           creates: true, filename: filename, contentType: plainType(), noteID: noteID)
            return try UploadReceiver(plan: plan, owner: owner, context: context,
                                      path: store.temporaryDirectory + "/raw-" + UploadRecord.newID(), entry: nil, generation: 0) { _ in }

        case .tus:
            try Self.checkTusVersion(headers)
            guard let lengthText = headers["Upload-Length"], let length = Int64(lengthText), length >= 0 else {
                throw tusError(.badRequest, headers["Upload-Defer-Length"] != nil
                    ? "Upload-Defer-Length is not supported: send Upload-Length" : "Upload-Length (a non-negative integer) is required")
            }
            guard length <= limits.maxSize else {
                throw tusError(.contentTooLarge, "Upload-Length \(length) is larger than the limit of \(limits.maxSize) bytes",
                               extra: [("Tus-Max-Size", String(limits.maxSize))])
            }
            if head.hasBody, media?.essence != "application/offset+octet-stream" {
                throw tusError(.unsupportedMediaType, "a creation-with-upload body must be application/offset+octet-stream")
            }
            let metadata = try Tus.metadata(headers["Upload-Metadata"])
            let filename = cleanFilename(metadata["filename"] ?? metadata["name"] ?? "upload")
            let type = UploadPolicy.contentType(metadata["filetype"] ?? metadata["type"] ?? "application/octet-stream")
            try requireNote(noteID, owner: owner)
            let record = try createRecord(dialect: .tus, filename: filename, contentType: type, length: length, noteID: noteID,
                                          expectedSHA256: nil, owner: owner)
            let plan = UploadReceiver.Plan(dialect: .tus, record: record, startOffset: 0, length: length, completes: false,
                                           checksum: try Tus.checksum(headers["Upload-Checksum"]), creates: true,
                                           filename: filename, contentType: type, noteID: noteID)
            return try receiver(plan, owner: owner, context: context)

        case .ietf(let version):
            let rules = DraftRules(sent: version)
            guard let complete = rules.isComplete(headers) else {
                throw HTTPError.badRequest("a resumable upload's creation needs \(rules.usesIncomplete ? "Upload-Incomplete" : "Upload-Complete") (a Structured Fields boolean)")
            }
            let length = try declaredLength(headers, complete: complete, offset: 0, contentLength: head.declaredLength, rules: rules)
            if let length, length > limits.maxSize {
                throw HTTPError(.contentTooLarge, detail: "the upload's \(length) bytes are more than the limit of \(limits.maxSize) bytes",
                                headers: draftHeaders(rules, complete: false, expiresAt: nil), closesConnection: true)
            }
            let expected = try Self.reprDigest(headers)
            try requireNote(noteID, owner: owner)
            let record = try createRecord(dialect: dialect, filename: disposition ?? "upload", contentType: plainType(), length: length,
                                          noteID: noteID, expectedSHA256: expected, owner: owner)
            let plan = UploadReceiver.Plan(dialect: dialect, record: record, startOffset: 0, length: length, completes: complete, checksum: nil,
                                           creates: true, filename: record.filename, contentType: record.contentType, noteID: noteID)
            // The request holds the upload before the client learns where it is: a HEAD right
            // after the 104 takes it over, never the other way round.
            let made = try receiver(plan, owner: owner, context: context)
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

    /// The row and the empty file of a new partial upload, within the user's limit.
    private func createRecord(dialect: UploadDialect, filename: String, contentType: String, length: Int64?, noteID: Int64?,
                              expectedSHA256: String?, owner: Owner) throws -> PartialUploadRecord {
        let usage = try store.partialUploadUsage(owner: owner)
        guard usage.count < limits.perUser else {
            throw HTTPError(HTTPStatus(429), detail: "you have \(usage.count) unfinished resumable uploads, the most one user may have: finish or cancel some",
                            closesConnection: true)
        }
        guard usage.bytes + (length ?? 0) <= limits.bytesPerUser else {
            throw HTTPError(HTTPStatus(429), detail: "your unfinished resumable uploads hold \(usage.bytes) bytes; with this one they would pass the limit of \(limits.bytesPerUser): finish or cancel some",
                            closesConnection: true)
        }
        let now = UnixTime.now()
        let record = PartialUploadRecord(id: UploadRecord.newID(), protocolName: dialect.storedName, filename: filename, contentType: contentType,
                                         length: length, offset: 0, noteID: noteID, expectedSHA256: expectedSHA256, createdAt: now,
                                         expiresAt: now + limits.lifetime)
        try files.create(record.id)
        do {
            try store.createPartialUpload(record, owner: owner)
        } catch {
            unlink(files.path(of: record.id))
            throw error
        }
        return record
    }

    private func receiver(_ plan: UploadReceiver.Plan, owner: Owner, context: RequestContext) throws -> UploadReceiver {
        let id = plan.record!.id
        let entry = files.entry(id)
        guard let (generation, offset) = entry.takeOver(), offset == plan.startOffset else {
            throw HTTPError(HTTPStatus(409), detail: "upload \(id) changed meanwhile: ask for its offset again", closesConnection: true)
        }
        let store = store, lifetime = limits.lifetime
        return try UploadReceiver(plan: plan, owner: owner, context: context, path: files.path(of: id), entry: entry, generation: generation) { receiver in
            // Cut short: what arrived is kept (the draft's "as much as possible"); the row learns the offset.
            guard receiver.holdsUpload, let record = plan.record else { return }
            fdatasync(receiver.fd)
            let progress = PartialUploadProgress(offset: receiver.offset, length: plan.length, expiresAt: UnixTime.now() + lifetime,
                                                 backendState: record.backendState)
            store.updatePartialUpload(id: id, progress: progress, owner: owner) { _ in }
        }
    }

    // MARK: - Append

    private func openAppend(_ head: RequestHead, _ context: RequestContext) throws -> UploadReceiver {
        let owner = context.owner
        let headers = head.headers
        let id = try Self.uploadID(head)
        let media = headers["Content-Type"].flatMap(MediaType.init)?.essence
        guard let record = try store.partialUpload(id: id, owner: owner) else {
            if try store.upload(id: id, owner: owner) != nil { throw completedError(id, head) }
            throw HTTPError(.notFound, detail: "upload \(id) does not exist", closesConnection: head.hasBody)
        }
        var dialect = UploadDialect.of(headers)
        if dialect == .raw { dialect = UploadDialect(storedName: record.protocolName) }
        let entry = files.entry(id)
        guard let (_, offset) = entry.takeOver() else {
            // Completing right now, or cancelled: say which once the row tells.
            for _ in 0..<200 {
                if try store.upload(id: id, owner: owner) != nil { throw completedError(id, head) }
                guard try store.partialUpload(id: id, owner: owner) != nil else { break }
                usleep(10_000)
            }
            throw HTTPError(.notFound, detail: "upload \(id) does not exist", closesConnection: head.hasBody)
        }
        let provided = headers["Upload-Offset"].flatMap { StructuredField.item($0)?.integer }
        switch dialect {
        case .tus:
            try Self.checkTusVersion(headers)
            guard media == "application/offset+octet-stream" else {
                throw tusError(.unsupportedMediaType, "a tus PATCH must be application/offset+octet-stream")
            }
            guard let provided, provided >= 0 else { throw tusError(.badRequest, "Upload-Offset (a non-negative integer) is required") }
            guard provided == offset else {
                throw tusError(HTTPStatus(409), "Upload-Offset \(provided) is not the upload's offset \(offset)", extra: [("Upload-Offset", String(offset))])
            }
            let plan = UploadReceiver.Plan(dialect: .tus, record: record, startOffset: offset, length: record.length, completes: false,
                                           checksum: try Tus.checksum(headers["Upload-Checksum"]), creates: false,
                                           filename: record.filename, contentType: record.contentType, noteID: record.noteID)
            return try receiver(plan, owner: owner, context: context)
        case .ietf(let version):
            let rules = DraftRules(sent: version)
            let (completeName, _) = rules.completeness(false)
            if rules.requiresPartialUploadType, media != "application/partial-upload" {
                throw HTTPError(.unsupportedMediaType, detail: "an append must be application/partial-upload",
                                headers: HTTPHeaders([rules.completeness(false)]), closesConnection: head.hasBody)
            }
            guard let complete = rules.isComplete(headers) else {
                throw HTTPError(.badRequest, detail: "an append needs \(completeName) (a Structured Fields boolean)", closesConnection: head.hasBody)
            }
            guard let provided, provided >= 0 else {
                throw HTTPError(.badRequest, detail: "an append needs Upload-Offset (a Structured Fields integer)", closesConnection: head.hasBody)
            }
            guard provided == offset else {
                var error = HTTPError(HTTPStatus(409), detail: "Upload-Offset \(provided) is not the upload's offset \(offset): append from \(offset)",
                                      headers: HTTPHeaders([("Upload-Offset", String(offset)), rules.completeness(false)]),
                                      closesConnection: head.hasBody)
                error.type = rules.problemType("mismatching-upload-offset")
                error.integerMembers = ["expected-offset": offset, "provided-offset": provided]
                throw error
            }
            let length = try declaredLength(headers, complete: complete, offset: offset, contentLength: head.declaredLength, rules: rules,
                                            recorded: record.length)
            let plan = UploadReceiver.Plan(dialect: dialect, record: record, startOffset: offset, length: length ?? record.length,
                                           completes: complete, checksum: nil, creates: false,
                                           filename: record.filename, contentType: record.contentType, noteID: record.noteID)
            if let expected = try Self.reprDigest(headers), let known = record.expectedSHA256, expected != known {
                throw HTTPError(.badRequest, detail: "Repr-Digest differs from the one the upload was created with", closesConnection: head.hasBody)
            }
            return try receiver(plan, owner: owner, context: context)
        case .raw:
            throw HTTPError(.badRequest, detail: "an append needs the resumable-upload fields", closesConnection: head.hasBody)
        }
    }

    /// The length a request declares (`Upload-Length`, or the offset plus `Content-Length` of a
    /// completing request), checked against itself and what was recorded.
    private func declaredLength(_ headers: HTTPHeaders, complete: Bool, offset: Int64, contentLength: Int64?, rules: DraftRules,
                                recorded: Int64? = nil) throws -> Int64? {
        let field = headers["Upload-Length"].flatMap { StructuredField.item($0)?.integer }
        let implied = complete ? contentLength.map { offset + $0 } : nil
        let lengths = [field, implied, recorded].compactMap { $0 }
        guard Set(lengths).count <= 1 else {
            var error = HTTPError(rules.version >= 7 ? .badRequest : HTTPStatus(409), detail: "the upload's length values disagree",
                                  headers: HTTPHeaders([rules.completeness(false)]), closesConnection: true)
            error.type = rules.version >= 7 ? rules.problemType("inconsistent-upload-length") : "about:blank"
            throw error
        }
        return field ?? implied ?? recorded
    }

    // MARK: - After the body

    /// The answer once an upload request's body has arrived whole.
    func finish(_ request: Request, _ context: RequestContext, receiver: UploadReceiver) throws -> Reply {
        let plan = receiver.plan
        guard let record = plan.record else { return try storeRaw(request, receiver: receiver) }
        let complete: Bool
        switch plan.dialect {
        case .tus: complete = receiver.offset == record.length
        default: complete = plan.completes
        }
        if complete { return try completeUpload(request, receiver: receiver, record: record) }
        // More to come: the row learns the offset, then the answer.
        let store = store, owner = receiver.owner, offset = receiver.offset, expiresAt = UnixTime.now() + limits.lifetime
        let progress = PartialUploadProgress(offset: offset, length: plan.length, expiresAt: expiresAt, backendState: record.backendState)
        let headers = progressHeaders(plan, record: record, request: request, offset: offset, expiresAt: expiresAt)
        let status: HTTPStatus = plan.creates ? .created : {
            if case .ietf(let version) = plan.dialect, DraftRules(sent: version).version <= 5 { return .created }
            return .noContent
        }()
        guard fdatasync(receiver.fd) == 0 else { throw HTTPError(.insufficientStorage, detail: "cannot store the upload's bytes") }
        return Reply.later { done in
            store.updatePartialUpload(id: record.id, progress: progress, owner: owner) { result in
                done {
                    guard try result.get() else { throw HTTPError(.notFound, detail: "upload \(record.id) was cancelled meanwhile") }
                    return Response(status: status, headers: headers)
                }
            }
        }
    }

    private func progressHeaders(_ plan: UploadReceiver.Plan, record: PartialUploadRecord, request: Request, offset: Int64, expiresAt: Int64) -> HTTPHeaders {
        var headers = HTTPHeaders([("Upload-Offset", String(offset))])
        if plan.creates { headers.add("Location", location(record.id, request.head)) }
        switch plan.dialect {
        case .tus:
            headers.add("Tus-Resumable", UploadDialect.tusVersion)
            headers.add("Upload-Expires", HTTPDate.format(expiresAt))
        case .ietf(let version):
            let rules = DraftRules(sent: version)
            headers.add(rules.completeness(false).0, rules.completeness(false).1)
            if let limit = rules.limit(maxSize: limits.maxSize, remainingSeconds: expiresAt - UnixTime.now()) { headers.add("Upload-Limit", limit) }
        case .raw: break
        }
        return headers
    }

    /// Seals the partial upload, checks its length and digest, moves its bytes into the blob
    /// store and replaces its row by the ordinary upload: what `POST /uploads` answers.
    private func completeUpload(_ request: Request, receiver: UploadReceiver, record: PartialUploadRecord) throws -> Reply {
        let store = store, files = files, owner = receiver.owner, plan = receiver.plan, length = receiver.offset
        let path = files.path(of: record.id)
        guard fsync(receiver.fd) == 0 else { throw HTTPError(.insufficientStorage, detail: "cannot store the upload's bytes") }
        if let declared = plan.length, declared != length {
            throw completionError(plan, status: .badRequest, "the upload ends at \(length) bytes, not at its declared length of \(declared)")
        }
        let (sealed, running) = receiver.entry!.seal(generation: receiver.generation, length: length)
        guard sealed else { throw HTTPError(HTTPStatus(409), detail: "a newer request took upload \(record.id) over") }
        let sha256 = try running ?? fileSHA256(path)
        if let expected = record.expectedSHA256, expected != sha256 {
            // Nothing half-stored: the upload is gone.
            files.retire(record.id, removingFile: true)
            _ = try? store.deletePartialUpload(id: record.id, owner: owner)
            throw completionError(plan, status: .badRequest, "the upload's SHA-256 is \(sha256), not the one Repr-Digest gave: it was discarded")
        }
        let key = UploadRecord.blobKey(record.id)
        try store.blobs.put(key, movingFile: path)
        files.retire(record.id, removingFile: false)
        let upload = NewUpload(id: record.id, filename: record.filename, contentType: record.contentType, size: length, sha256: sha256)
        let headers = completionHeaders(plan, record: record, request: request, length: length)
        return Reply.later { done in
            store.completePartialUpload(upload, owner: owner) { result in
                done {
                    guard let added = try result.get() else {
                        try? store.blobs.delete(key)
                        throw HTTPError(.notFound, detail: "upload \(record.id) was cancelled meanwhile")
                    }
                    return try Self.created(added, request: request, headers: headers, noContent: plan.dialect == .tus && !plan.creates)
                }
            }
        }
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
        if case .ietf(let version) = plan.dialect { headers.add(DraftRules(sent: version).completeness(true).0, DraftRules(sent: version).completeness(true).1) }
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
    private func storeRaw(_ request: Request, receiver: UploadReceiver) throws -> Reply {
        let store = store, plan = receiver.plan, owner = receiver.owner
        guard let sha256 = receiver.takeSHA256() else { return .now(HTTPError(.internalServerError).response(requestID: "-")) }
        let upload = NewUpload(id: UploadRecord.newID(), filename: plan.filename, contentType: plan.contentType, size: receiver.offset, sha256: sha256)
        do { try store.blobs.put(UploadRecord.blobKey(upload.id), movingFile: receiver.path) } catch {
            unlink(receiver.path)
            throw error
        }
        return Reply.later { done in
            store.addUploads([upload], noteID: plan.noteID, owner: owner) { result in
                done {
                    guard let added = try result.get() else { throw HTTPError(.notFound, detail: "note \(plan.noteID.map(String.init) ?? "") does not exist") }
                    return try JSON(UploadList(uploads: added.uploads.map(Upload.init)), status: .created).response(for: request)
                }
            }
        }
    }

    // MARK: - Offset, cancel, options

    /// `HEAD /uploads/{id}` in either protocol: the offset (taking the upload over from any
    /// request still appending). nil: not a resumable-upload request on an ordinary upload.
    func offset(_ request: Request, _ context: RequestContext) throws -> Reply? {
        let id = try Self.uploadID(request.head)
        let dialect = UploadDialect.of(request.headers)
        let owner = context.owner
        if dialect == .tus { try Self.checkTusVersion(request.headers) }
        guard let record = try store.partialUpload(id: id, owner: owner) else {
            guard dialect != .raw else { return nil }
            guard let upload = try store.upload(id: id, owner: owner) else { throw HTTPError(.notFound, detail: "upload \(id) does not exist") }
            return .now(offsetResponse(dialect, id: id, offset: upload.size, length: upload.size, complete: true, expiresAt: nil, metadata: nil))
        }
        guard let (_, offset) = files.entry(id).takeOver() else {
            // Completing right now (its bytes moved, its row not replaced yet): wait for the row.
            for _ in 0..<200 {
                if let upload = try store.upload(id: id, owner: owner) {
                    return .now(offsetResponse(dialect, id: id, offset: upload.size, length: upload.size, complete: true, expiresAt: nil, metadata: nil))
                }
                guard try store.partialUpload(id: id, owner: owner) != nil else { break }
                usleep(10_000)
            }
            throw HTTPError(.notFound, detail: "upload \(id) does not exist")
        }
        let effective = dialect == .raw ? UploadDialect(storedName: record.protocolName) : dialect
        return .now(offsetResponse(effective, id: id, offset: offset, length: record.length, complete: false, expiresAt: record.expiresAt,
                                   metadata: record))
    }

    private func offsetResponse(_ dialect: UploadDialect, id: String, offset: Int64, length: Int64?, complete: Bool, expiresAt: Int64?,
                                metadata: PartialUploadRecord?) -> Response {
        var headers = HTTPHeaders([("Upload-Offset", String(offset)), ("Cache-Control", "no-store")])
        if let length { headers.add("Upload-Length", String(length)) }
        switch dialect {
        case .tus:
            headers.add("Tus-Resumable", UploadDialect.tusVersion)
            if length == nil { headers.add("Upload-Defer-Length", "1") }
            if let expiresAt { headers.add("Upload-Expires", HTTPDate.format(expiresAt)) }
            if let metadata {
                headers.add("Upload-Metadata", "filename \(Base64.encode(Array(metadata.filename.utf8))),filetype \(Base64.encode(Array(metadata.contentType.utf8)))")
            }
            return Response(status: .ok, headers: headers)
        case .ietf(let version):
            let rules = DraftRules(sent: version)
            let field = rules.completeness(complete)
            headers.add(field.0, field.1)
            if let limit = rules.limit(maxSize: limits.maxSize, remainingSeconds: (expiresAt ?? UnixTime.now()) - UnixTime.now()) {
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
    func cancel(_ request: Request, _ context: RequestContext) throws -> Reply? {
        let id = try Self.uploadID(request.head)
        let owner = context.owner, store = store, files = files
        if UploadDialect.of(request.headers) == .tus { try Self.checkTusVersion(request.headers) }
        guard try store.partialUpload(id: id, owner: owner) != nil else { return nil }
        files.entry(id).retire()
        let tus = request.headers["Tus-Resumable"] != nil
        return Reply.later { done in
            store.deletePartialUpload(id: id, owner: owner) { result in
                files.retire(id, removingFile: true)
                done {
                    guard try result.get() else { throw HTTPError(.notFound, detail: "upload \(id) does not exist") }
                    return Response(status: .noContent, headers: tus ? HTTPHeaders([("Tus-Resumable", UploadDialect.tusVersion)]) : HTTPHeaders())
                }
            }
        }
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
        headers.add("Upload-Limit", rules.limit(maxSize: limits.maxSize, remainingSeconds: limits.lifetime)
                    ?? "max-size=\(limits.maxSize), max-age=\(limits.lifetime)")
        return Response(status: .noContent, headers: headers)
    }

    // MARK: - Expiry

    /// Deletes partial uploads past their lifetime (rows and bytes); how many.
    @discardableResult
    func sweep(now: Int64) -> Int {
        var removed = 0
        while let expired = try? store.expiredPartialUploads(now: now, limit: 100), !expired.isEmpty {
            for (record, owner) in expired {
                files.entry(record.id).retire()
                _ = try? store.deletePartialUpload(id: record.id, owner: owner)
                files.retire(record.id, removingFile: true)
                removed += 1
            }
            if expired.count < 100 { break }
        }
        // Files no row names (a crash between a file and its row): untouched for longer than
        // any row lives, so whatever row they had has expired and gone.
        for (name, modified) in files.listing() where modified < now - limits.lifetime - 60 {
            files.retire(name, removingFile: true)
            removed += 1
        }
        return removed
    }

    // MARK: - Helpers

    static func uploadID(_ head: RequestHead) throws(HTTPError) -> String {
        let path = head.path
        let id = path.split(separator: "/").last.map(String.init) ?? ""
        guard UploadInput.isUploadID(id) else { throw HTTPError(.notFound, detail: "upload \(printable(id)) does not exist", closesConnection: head.hasBody) }
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
            throw HTTPError(.preconditionFailed, detail: "this server speaks tus \(UploadDialect.tusVersion)",
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
        var error = HTTPError(.badRequest, detail: "upload \(id) is complete: nothing can be appended",
                              headers: HTTPHeaders([rules.completeness(true)]), closesConnection: head.hasBody)
        error.type = rules.problemType("completed-upload")
        return error
    }

    private func draftHeaders(_ rules: DraftRules, complete: Bool, expiresAt: Int64?) -> HTTPHeaders {
        var headers = HTTPHeaders([rules.completeness(complete)])
        if let limit = rules.limit(maxSize: limits.maxSize, remainingSeconds: (expiresAt ?? UnixTime.now() + limits.lifetime) - UnixTime.now()) {
            headers.add("Upload-Limit", limit)
        }
        return headers
    }

    /// `Repr-Digest`'s sha-256 as lowercase hex; nil when absent or without sha-256.
    static func reprDigest(_ headers: HTTPHeaders) throws(HTTPError) -> String? {
        guard let header = headers["Repr-Digest"] else { return nil }
        guard let members = StructuredField.dictionary(header) else { throw HTTPError.badRequest("Repr-Digest is not a Structured Fields dictionary") }
        guard let member = members.first(where: { $0.key == "sha-256" }) else { return nil }
        guard let bytes = member.value.bytes, bytes.count == 32 else { throw HTTPError.badRequest("Repr-Digest's sha-256 is not 32 bytes") }
        let hex = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 0xF)]] }, as: UTF8.self)
    }
}

/// IMF-fixdate (RFC 9110 §5.6.7), as tus's `Upload-Expires` is.
enum HTTPDate {
    static func format(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"], months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}

/// Unix seconds, UTC (CLOCK_REALTIME, as the stores stamp rows).
enum UnixTime {
    static func now() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec)
    }
}
