import Foundation
import Testing
import JotterAPI
import JotterHTTP
import JotterWire
@testable import JotterServer
import JotterServerTestSupport

/// `/openapi.json` is derived from the route table and the wire types' schemas; these tests keep
/// it complete, consistent, equal to `docs/openapi.json`, and true of what the server sends.
@Suite("OpenAPI document")
struct OpenAPITests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let snapshot = root.appendingPathComponent("docs/openapi.json")
    static let methods: Set<String> = ["get", "put", "post", "patch", "delete", "options", "head", "trace"]

    /// The served document, parsed.
    static func served(_ app: TestApp) throws -> (bytes: [UInt8], document: [String: Any], validator: SchemaValidator) {
        let response = try app.request("GET", "/openapi.json")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        return (response.body, try response.json(), try SchemaValidator(documentBytes: response.body))
    }

    @Test("docs/openapi.json is the document the server serves (JOTTER_UPDATE_OPENAPI=1 rewrites it: make openapi)")
    func snapshotIsCurrent() throws {
        try TestApp.with { app in
            let served = try Self.served(app).bytes
            if ProcessInfo.processInfo.environment["JOTTER_UPDATE_OPENAPI"] == "1" {
                try Data(served).write(to: Self.snapshot)
                return
            }
            let committed = (try? Data(contentsOf: Self.snapshot)).map { String(decoding: $0, as: UTF8.self) } ?? ""
            let difference = Self.firstDifference(committed, String(decoding: served, as: UTF8.self))
            #expect(
                difference == nil,
                "docs/openapi.json is not the served /openapi.json (\(difference ?? "")): run `make openapi` and commit docs/openapi.json")
        }
    }

    /// The first line where `old` and `new` differ, or `nil` when they are equal.
    static func firstDifference(_ old: String, _ new: String) -> String? {
        guard old != new else { return nil }
        let (a, b) = (old.split(separator: "\n", omittingEmptySubsequences: false), new.split(separator: "\n", omittingEmptySubsequences: false))
        let line = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
        return "line \(line + 1): committed \(line < a.count ? "`\(a[line])`" : "nothing"), served \(line < b.count ? "`\(b[line])`" : "nothing")"
    }

    @Test("every registered route has an operation, and the document has exactly the registered routes")
    func exactlyTheRoutes() throws {
        try TestApp.with { app in
            let table = app.app.server.router.table
            let undocumented = table.filter { $0.operation == nil }.map { "\($0.method) \($0.path)" }
            #expect(undocumented.isEmpty, "routes without an operation: \(undocumented)")
            let paths = try #require(try Self.served(app).document["paths"] as? [String: [String: Any]])
            var documented = Set<String>()
            for (path, item) in paths {
                for method in item.keys where Self.methods.contains(method) { documented.insert("\(method.uppercased()) \(path)") }
            }
            let registered = Set(table.map { "\($0.method) \($0.openAPIPath)" })
            #expect(
                documented == registered,
                "documented, not registered: \(documented.subtracting(registered).sorted()); registered, not documented: \(registered.subtracting(documented).sorted())"
            )
            #expect(registered.contains("GET /notes/{id}") && registered.contains("GET /"))
        }
    }

    @Test("every $ref resolves, and every component schema is used")
    func referencesResolve() throws {
        try TestApp.with { app in
            let validator = try Self.served(app).validator
            let references = validator.references()
            #expect(references.count > 20)
            for (at, ref) in references {
                #expect(validator.resolve(ref) != nil, "\(at): \(ref) does not resolve")
            }
            let used = Set(references.map(\.ref))
            for name in validator.schemas.keys {
                #expect(used.contains("#/components/schemas/\(name)"), "the component \(name) is never used")
            }
        }
    }

    @Test("path parameters come from the patterns: each {name} is a required path parameter of every operation")
    func pathParameters() throws {
        try TestApp.with { app in
            let paths = try #require(try Self.served(app).document["paths"] as? [String: [String: Any]])
            for (path, item) in paths {
                let names = Set(path.matches(of: /\{(\w+)\}/).map { String($0.1) })
                for (method, operation) in item where Self.methods.contains(method) {
                    let parameters = ((operation as? [String: Any])?["parameters"] as? [[String: Any]]) ?? []
                    let inPath = parameters.filter { $0["in"] as? String == "path" }
                    #expect(Set(inPath.compactMap { $0["name"] as? String }) == names, "\(method) \(path)")
                    #expect(inPath.allSatisfy { $0["required"] as? Bool == true }, "\(method) \(path)")
                }
            }
        }
    }

    @Test(
        "an alias repeats its original's operation, with its own id and a note",
        arguments: [
            ("post", "/upload", "/uploads"), ("get", "/echo_hello.php", "/hello"), ("post", "/echo_hello.php", "/hello"),
        ])
    func aliases(_ method: String, _ alias: String, _ original: String) throws {
        try TestApp.with { app in
            let paths = try #require(try Self.served(app).document["paths"] as? [String: [String: Any]])
            var copy = try #require(paths[alias]?[method] as? [String: Any])
            var source = try #require(paths[original]?[method] as? [String: Any])
            #expect(copy["operationId"] as? String != source["operationId"] as? String)
            #expect((copy["summary"] as? String)?.hasPrefix(try #require(source["summary"] as? String)) == true)
            #expect((copy["description"] as? String)?.contains("`\(method.uppercased()) \(original)`") == true)
            for key in ["operationId", "summary", "description"] {
                copy[key] = nil
                source[key] = nil
            }
            let encode = { (value: [String: Any]) in try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]) }
            #expect(try encode(copy) == encode(source))
        }
    }

    // MARK: - The wire types against their schemas

    static let upload = Upload(
        id: "0123456789abcdef01234567", filename: "photo.png", contentType: "image/png", size: 1 << 40,
        sha256: String(repeating: "a", count: 64), createdAt: Timestamp.date("2026-11-30 14:35:40")!, noteID: nil,
        url: "/uploads/0123456789abcdef01234567/content")
    static var attached: Upload { var upload = upload; upload.noteID = "42"; return upload }
    static let note = Note(
        id: "42", body: "Buy milk", createdAt: Timestamp.date("2026-11-30 14:35:40")!, updatedAt: Timestamp.date("2026-11-30 14:35:41")!,
        version: 3, attachments: [attached])
    static let merge = MergeReport(base: 2, result: "overlap", regions: [.init(start: 4, end: 9)])
    static let empty = Note(
        id: "1", body: "", createdAt: Timestamp.date("1970-01-01 00:00:00")!, updatedAt: Timestamp.date("1970-01-01 00:00:00")!, version: 1)
    static let backup = Backup(
        id: "5f0c9a1b2d3e4f5061728394", createdAt: Timestamp.date("2026-12-01 09:30:00")!, jotterVersion: "0.1.0", schemaVersion: 2,
        notes: 2000, lastEventID: 2051, databaseSize: 4_517_560, uploads: [attached],
        filesURL: "/admin/backups/5f0c9a1b2d3e4f5061728394/files")
    /// `backup.json` of a backup taken from a data folder directly.
    static var local: Backup { var backup = backup; backup.id = ""; backup.filesURL = "."; backup.uploads = []; return backup }
    static let file = EchoResponse.File(filename: "a.txt", contentType: "text/plain", size: 3, sha256: String(repeating: "b", count: 64))

    /// Samples of every wire type, as the SDK's Codable types and as the server's own encoders
    /// write them; together they use every optional property both ways.
    static func samples() -> [(type: any SchemaDescribing.Type, values: [any Encodable])] {
        let echoFile = EchoResponse.File(filename: "a.txt", contentType: "text/plain", size: 3, sha256: String(repeating: "b", count: 64))
        var serverEcho = EchoResponse(method: "POST", url: "/echo?x=1&x=2&y=3", args: ["x": ["1", "2"], "y": ["3"]])
        serverEcho.form = ["name": ["Bob"]]
        serverEcho.files = ["file": [echoFile], "more": [echoFile, echoFile]]
        serverEcho.headers = ["Host": "localhost"]
        var jsonEcho = EchoResponse(method: "PUT", url: "/echo")
        jsonEcho.json = .object(["a": .array([.number(1), .null, .bool(true), .string("x")])])
        jsonEcho.data = #"{"a":[1,null,true,"x"]}"#
        let user = UserInfo(id: "1", name: "ann", admin: true, createdAt: Timestamp.date("2026-12-01 10:00:00")!)
        let token = TokenInfo(
            id: "3", label: "laptop", createdAt: Timestamp.date("2026-12-01 10:00:00")!, lastUsedAt: nil, expiresAt: nil, revokedAt: nil)
        let used = TokenInfo(
            id: "4", label: "ci", createdAt: Timestamp.date("2026-12-01 10:00:00")!, lastUsedAt: Timestamp.date("2026-12-01 10:05:00")!,
            expiresAt: Timestamp.date("2026-12-31 10:00:00")!, revokedAt: Timestamp.date("2026-12-02 10:00:00")!)
        return [
            (Note.self, [note, empty]),
            (
                NoteEnvelope.self,
                NoteEnvelope.messages.map { NoteEnvelope(note: note, message: $0) } + [NoteEnvelope(note: empty)]
                    + [NoteEnvelope(note: note, message: "Note Updated", merge: merge)]
            ),
            (MergeReport.self, [merge, MergeReport(base: 1, result: "clean", regions: [])]),
            (MergeReport.Region.self, [MergeReport.Region(start: 0, end: 12)]),
            (NoteList.self, [NoteList([note, empty], next: "/notes?limit=2&after=1"), NoteList([], next: nil)]),
            (
                NoteChangeList.self,
                [
                    NoteChangeList(changes: [.note(note), .deleted(id: "7", version: 2), .note(empty)], cursor: 2051, more: false, reset: false),
                    NoteChangeList(changes: [], cursor: -17, more: true, reset: true),
                ]
            ),
            (RevisionInfo.self, [RevisionInfo(RevisionStamp(version: 3, createdAt: Timestamp.date("2026-11-30 14:35:41")!, merged: true), size: 8)]),
            (
                RevisionList.self,
                [
                    RevisionList(
                        [RevisionInfo(RevisionStamp(version: 3, createdAt: Timestamp.date("2026-11-30 14:35:41")!, merged: false), size: 8)],
                        next: "/notes/42/revisions?limit=1&after=3"),
                    RevisionList([], next: nil),
                ]
            ),
            (
                Revision.self,
                [Revision(RevisionStamp(version: 2, createdAt: Timestamp.date("2026-11-30 14:35:40")!, merged: false), body: "Buy milk")]
            ),
            (
                RevisionEnvelope.self,
                [
                    RevisionEnvelope(
                        revision: Revision(RevisionStamp(version: 2, createdAt: Timestamp.date("2026-11-30 14:35:40")!, merged: true), body: ""))
                ]
            ),
            (
                DeletedNote.self,
                [
                    DeletedNote(note: note, deletedAt: Timestamp.date("2026-12-01 09:30:00")!),
                    DeletedNote(note: empty, deletedAt: Timestamp.date("1970-01-01 00:00:00")!),
                ]
            ),
            (
                TrashList.self,
                [
                    TrashList(
                        [DeletedNote(note: note, deletedAt: Timestamp.date("2026-12-01 09:30:00")!)], next: "/notes/trash?limit=1&after=42"),
                    TrashList([], next: nil),
                ]
            ),
            (Upload.self, [upload, attached]),
            (UploadList.self, [UploadList(uploads: [upload, attached]), UploadList(uploads: [])]),
            (
                UploadPage.self,
                [
                    UploadPage([upload, attached], next: "/uploads?limit=2&after=7c1a0e5b9d3f4a2e8b6c0d1f"),
                    UploadPage([], next: nil),
                ]
            ),
            (UploadEnvelope.self, [UploadEnvelope(upload: attached)]),
            (HelloMessage.self, [HelloMessage(message: "Hello Bob!")]),
            (
                HealthStatus.self,
                [
                    HealthStatus(status: "ok"),
                    HealthStatus(status: "ok", checks: ["database": "ok", "data_folder": "ok", "free_space": "ok"], freeBytes: 1 << 33),
                ]
            ),
            (Backup.self, [backup, local]),
            (BackupEnvelope.self, [BackupEnvelope(backup: backup)]),
            (
                ProblemDetails.self,
                [
                    ProblemDetails(title: "Not Found", status: 404, detail: "note 42 does not exist", requestID: "k3x9a-12"),
                    ProblemDetails(
                        title: "Unprocessable Content", status: 422, detail: "the request body has invalid fields",
                        errors: [.init(field: "body", message: "is required")], requestID: "k3x9a-13"),
                    ProblemDetails(title: "Internal Server Error", status: 500, requestID: "k3x9a-14"),
                    ProblemBody(HTTPError.validation([.init(field: "body", message: "is required")])),
                    ProblemBody(HTTPError(.notFound)),
                    ProblemBody(
                        {
                            var error = HTTPError(HTTPStatus(409), detail: "note 42 is too large to merge on the server")
                            error.type = "/problems/merge-too-large"
                            error.members = [
                                "note": .object([
                                    "id": "42", "body": "Buy milk", "created_at": "2026-11-30 14:35:40",
                                    "updated_at": "2026-11-30 14:35:41", "version": 3, "attachments": .array([]),
                                ]),
                                "base": .object(["version": 2, "created_at": "2026-11-30 14:35:40", "body": "Buy", "merged": false]),
                            ]
                            return error
                        }()),
                    ProblemBody(
                        {
                            var error = HTTPError(HTTPStatus(409), detail: "note 42 was deleted at 2026-12-01 09:30:00 UTC and is in the trash")
                            error.type = "/problems/note-deleted"
                            error.members = [
                                "note": .object([
                                    "id": "42", "body": "Buy milk", "created_at": "2026-11-30 14:35:40",
                                    "updated_at": "2026-11-30 14:35:41", "version": 3, "attachments": .array([]),
                                ]),
                                "deleted_at": "2026-12-01 09:30:00",
                            ]
                            return error
                        }()),
                ]
            ),
            (
                ProblemDetails.FieldError.self,
                [ProblemDetails.FieldError(field: "limit", message: "must be a whole number of at least 1 (over 1000 acts as 1000)")]
            ),
            (
                EchoResponse.self,
                [
                    decoded(
                        #"{"method":"POST","url":"/echo?x=1&x=2","args":{"x":["1","2"]},"form":{"name":"Bob"},"files":{"file":{"filename":"a.txt","content_type":"text/plain","size":3,"sha256":"\#(String(repeating: "b", count: 64))"}},"json":null,"data":"","headers":{"Host":"localhost"}}"#
                    ),
                    decoded(
                        #"{"method":"PUT","url":"/echo","args":{},"form":{},"files":{},"json":{"a":[1,null]},"data":"{\"a\":[1,null]}","headers":{}}"#
                    ),
                    serverEcho, jsonEcho,
                ]
            ),
            (EchoResponse.File.self, [file, echoFile]),
            (UserInfo.self, [user]),
            (UserList.self, [UserList(users: [user]), UserList(users: [])]),
            (
                SessionInfo.self,
                [
                    SessionInfo(user: user, csrfToken: String(repeating: "a1", count: 16), expiresAt: Timestamp.date("2026-12-15 10:00:00")!),
                    SessionInfo(user: user),
                ]
            ),
            (TokenInfo.self, [token, used]),
            (TokenList.self, [TokenList(tokens: [used, token])]),
            (IssuedToken.self, [IssuedToken(token: "jot_" + String(repeating: "Ab1", count: 12), info: token, user: user)]),
        ]
    }

    static func decoded(_ json: String) -> EchoResponse {
        try! JSONDecoder().decode(EchoResponse.self, from: Data(json.utf8))
    }

    /// The bytes the server's `HTTPError` rendering sends, as an `Encodable` sample.
    struct ProblemBody: Encodable {
        let bytes: [UInt8]
        init(_ error: HTTPError) { bytes = error.response(requestID: "k3x9a-15").body }
        func encode(to encoder: any Encoder) throws { fatalError("encoded through its bytes") }
    }

    /// Every way the value reaches the wire: JSONEncoder, and the server's JSONWriter where it has one.
    static func encodings(_ value: any Encodable) throws -> [[UInt8]] {
        if let problem = value as? ProblemBody { return [problem.bytes] }
        var encodings = [[UInt8](try JSONCoding.encoder.encode(value))]
        if let writable = value as? any JSONWritable {
            var json = JSONWriter()
            writable.write(to: &json)
            encodings.append(json.bytes)
        }
        return encodings
    }

    @Test("a sample of every wire type, encoded, has the keys and types of its schema, and uses every documented property")
    func wireTypesMatchTheirSchemas() throws {
        let document = OpenAPIDocument.render(routes: [], info: OpenAPIOperations.info, components: OpenAPIOperations.components)
        let validator = try SchemaValidator(documentBytes: document)
        let samples = Self.samples()
        #expect(Set(samples.map { $0.type.componentName }) == Set(WireSchemas.types.map { $0.componentName }), "every wire type needs samples")
        for (type, values) in samples {
            for value in values {
                for bytes in try Self.encodings(value) {
                    let errors = validator.errors(json: bytes, component: type.componentName)
                    #expect(errors.isEmpty, "\(type.componentName) \(String(decoding: bytes, as: UTF8.self)): \(errors)")
                }
            }
        }
        for type in WireSchemas.types {
            let declared = Set(type.schema.properties.keys)
            #expect(validator.seen[type.componentName, default: []] == declared, "\(type.componentName): properties no sample has")
        }
    }

    @Test("the validator catches a missing, an extra and a mistyped property")
    func validatorIsStrict() throws {
        let document = OpenAPIDocument.render(routes: [], info: OpenAPIOperations.info, components: OpenAPIOperations.components)
        let validator = try SchemaValidator(documentBytes: document)
        let good = Array(#"{"status":"ok"}"#.utf8)
        #expect(validator.errors(json: good, component: "HealthStatus").isEmpty)
        for bad in [#"{}"#, #"{"status":"ok","extra":1}"#, #"{"status":1}"#, #"{"status":"down"}"#] {
            #expect(!validator.errors(json: Array(bad.utf8), component: "HealthStatus").isEmpty, "\(bad)")
        }
        #expect(!validator.errors(json: Array(#"{"id":"x","upload":null}"#.utf8), component: "UploadEnvelope").isEmpty)
        #expect(!validator.errors(json: Array(#"{"notes":[],"next":5}"#.utf8), component: "NoteList").isEmpty)
    }
}
