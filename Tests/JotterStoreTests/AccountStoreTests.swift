import Foundation
import Synchronization
import Testing
@testable import JotterStore

/// Users, credentials and owners in the store: every query is scoped by its owner.
@Suite("Accounts in the store")
struct AccountStoreTests {
    func addUser(_ store: any DataStore, _ name: String, admin: Bool = false) throws -> UserRecord {
        guard case .user(let user) = try store.perform(.addUser(name: name, passwordHash: try PasswordHash.make("pw-\(name)"), isAdmin: admin)) else {
            throw FixtureError("user \(name) not added")
        }
        return user
    }

    func upload(_ store: any DataStore, _ directory: TemporaryDirectory, note: Int64?, owner: Owner) throws -> NoteWriteResult {
        let path = directory.path + "/tmp/t-\(UUID().uuidString)"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path))
        let upload = try store.stage(path, size: 3)
        return try store.perform(.addUploads([upload], noteID: note), owner: owner)
    }

    @Test("Argon2id: the stored form names the algorithm, verifies the password and nothing else")
    func passwordHash() throws {
        let hash = try PasswordHash.make("correct horse")
        #expect(hash.hasPrefix("$argon2id$"))
        #expect(!hash.contains("correct horse"))
        #expect(PasswordHash.verify("correct horse", hash: hash))
        #expect(!PasswordHash.verify("correct hors", hash: hash))
        #expect(!PasswordHash.verify("", hash: hash))
        #expect(try PasswordHash.make("correct horse") != hash)  // a fresh salt each time
        #expect(!PasswordHash.verify("anything", hash: PasswordHash.decoy))
    }

    @Test("secrets: prefix, checksum and length are checked; only the SHA-256 is kept", arguments: Backend.all)
    func secrets(backend: Backend) throws {
        let token = Secret.make(prefix: Secret.tokenPrefix)
        let session = Secret.make(prefix: Secret.sessionPrefix)
        #expect(token.hasPrefix("jot_") && token.utf8.count == 40)
        #expect(Secret.kind(of: token) == .token)
        #expect(Secret.kind(of: session) == .session)
        #expect(Secret.make(prefix: Secret.tokenPrefix) != token)
        // One character changed in the random part: the checksum no longer matches.
        var chars = Array(token)
        chars[10] = chars[10] == "a" ? "b" : "a"
        #expect(Secret.kind(of: String(chars)) == nil)
        #expect(Secret.kind(of: "ghp_" + token.dropFirst(4)) == nil)
        #expect(Secret.kind(of: token.dropLast()) == nil)
        #expect(Secret.kind(of: token + "x") == nil)
        #expect(Secret.kind(of: token.replacingOccurrences(of: "jot_", with: "jot-")) == nil)
        #expect(Secret.digest(token).count == 32)

        let fixture = try StoreFixture(backend)
        let user = try addUser(fixture.store, "ann")
        guard
            case .credential(let record) = try fixture.store.perform(
                .issue(userID: user.id, kind: .token, label: "laptop", digest: Secret.digest(token), expiresAt: nil))
        else {
            Issue.record("not issued"); return
        }
        #expect(try fixture.store.credential(digest: Secret.digest(token))?.0 == record)
        #expect(try fixture.store.credential(digest: Secret.digest(session)) == nil)
        // Nothing in the file holds the token itself.
        guard backend == .sqlite else { return }
        fixture.store.close()
        let bytes =
            try Data(contentsOf: URL(fileURLWithPath: fixture.directory.databasePath))
            + ((try? Data(contentsOf: URL(fileURLWithPath: fixture.directory.databasePath + "-wal"))) ?? Data())
        #expect(bytes.range(of: Data(token.utf8)) == nil)
        #expect(bytes.range(of: Data(token.dropFirst(4).utf8)) == nil)
    }

    @Test("names are unique without regard to case; the first user takes over unclaimed notes, uploads and events", arguments: Backend.all)
    func firstUserClaims(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let old = try fixture.create("from before accounts")
        guard case .uploadsAdded(let files, _, _) = try upload(store, fixture.directory, note: nil, owner: .unclaimed) else {
            Issue.record("no upload"); return
        }
        let ann = try addUser(store, "ann", admin: true)
        #expect(try store.perform(.addUser(name: "ANN", passwordHash: "x", isAdmin: false)) == .nameTaken)
        let bob = try addUser(store, "bob")
        #expect(try store.note(id: old.id, owner: ann.owner)?.body == "from before accounts")
        #expect(try store.note(id: old.id, owner: bob.owner) == nil)
        #expect(try store.note(id: old.id, owner: .unclaimed) == nil)
        #expect(try store.upload(id: files[0].id, owner: ann.owner) != nil)
        #expect(try store.events(after: 0, limit: 10, owner: ann.owner)?.count == 1)
        #expect(try store.events(after: 0, limit: 10, owner: bob.owner) == [])
        #expect(try store.users().map(\.name) == ["ann", "bob"])
        #expect(try store.user(named: "Bob")?.id == bob.id)
    }

    @Test("another owner's note and upload are absent to every read and write", arguments: Backend.all)
    func scoping(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let ann = try addUser(store, "ann").owner, bob = try addUser(store, "bob").owner
        guard case .done(let note, _) = try store.perform(.create(body: "ann's secret plan"), owner: ann),
            case .uploadsAdded(let files, _, _) = try upload(store, fixture.directory, note: note.id, owner: ann)
        else {
            Issue.record("setup"); return
        }
        let file = files[0].id
        _ = try store.perform(.create(body: "bob's plan"), owner: bob)

        #expect(try store.note(id: note.id, owner: bob) == nil)
        #expect(try store.noteWithAttachments(id: note.id, owner: bob) == nil)
        #expect(try store.notes(NoteQuery(), owner: bob).map(\.body) == ["bob's plan"])
        #expect(try store.notes(NoteQuery(search: "secret"), owner: bob).isEmpty)
        #expect(try store.notes(NoteQuery(search: "plan"), owner: bob).map(\.body) == ["bob's plan"])
        #expect(try store.notesWithAttachments(NoteQuery(order: .oldestFirst), owner: bob).records.map(\.body) == ["bob's plan"])
        #expect(try store.attachments(of: [note.id], owner: bob).isEmpty)
        #expect(try store.upload(id: file, owner: bob) == nil)
        #expect(try store.uploads(UploadQuery(limit: 10), owner: bob)?.isEmpty == true)
        #expect(try store.uploads(UploadQuery(limit: 10, after: file), owner: bob) == nil)  // A's id is no cursor for B
        #expect(try store.events(after: 0, limit: 100, owner: bob)?.map(\.note.body) == ["bob's plan"])

        #expect(try store.perform(.update(id: note.id, body: "bob was here", ifVersion: nil), owner: bob) == .notFound)
        #expect(try store.perform(.touch(id: note.id, ifVersion: nil), owner: bob) == .notFound)
        #expect(try store.perform(.delete(id: note.id, ifVersion: nil), owner: bob) == .notFound)
        #expect(try upload(store, fixture.directory, note: note.id, owner: bob) == .notFound)
        #expect(try store.perform(.deleteUpload(id: file), owner: bob) == .notFound)

        #expect(try store.note(id: note.id, owner: ann)?.body == "ann's secret plan")
        #expect(try store.note(id: note.id, owner: ann)?.version == 2)  // the attachment's touch only
        #expect(try store.upload(id: file, owner: ann) != nil)
    }

    @Test("removing a user removes their notes, uploads (files too), events and credentials, and no one else's", arguments: Backend.all)
    func removeUser(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let ann = try addUser(store, "ann"), bob = try addUser(store, "bob")
        guard case .done(let note, _) = try store.perform(.create(body: "a"), owner: ann.owner),
            case .uploadsAdded(let files, _, _) = try upload(store, fixture.directory, note: nil, owner: ann.owner),
            case .done(let kept, _) = try store.perform(.create(body: "b"), owner: bob.owner)
        else {
            Issue.record("setup"); return
        }
        let token = Secret.make(prefix: Secret.tokenPrefix)
        _ = try store.perform(.issue(userID: ann.id, kind: .token, label: "", digest: Secret.digest(token), expiresAt: nil))
        #expect(try store.perform(.removeUser(userID: ann.id)) == .done)
        #expect(try store.user(id: ann.id) == nil)
        #expect(try store.note(id: note.id, owner: ann.owner) == nil)
        #expect(try store.credential(digest: Secret.digest(token)) == nil)
        #expect(try store.events(after: 0, limit: 10, owner: ann.owner) ?? [] == [])  // nil: the ids before are gone
        #expect(!FileManager.default.fileExists(atPath: fixture.contentPath(of: files[0].id)))
        #expect(try store.note(id: kept.id, owner: bob.owner) != nil)
        #expect(try store.perform(.removeUser(userID: ann.id)) == .notFound)
        #expect(try fixture.integrityCheck() == "ok")
    }

    @Test("the last administrator is not removed, and two administrators removed at once leave one", arguments: Backend.all)
    func lastAdministrator(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let ann = try addUser(store, "ann", admin: true), bob = try addUser(store, "bob")
        _ = try store.perform(.create(body: "ann's"), owner: ann.owner)
        #expect(try store.perform(.removeUser(userID: ann.id)) == .lastAdministrator)
        #expect(try store.user(id: ann.id) == ann)
        #expect(try store.notes(NoteQuery(), owner: ann.owner).map(\.body) == ["ann's"])
        #expect(try store.perform(.removeUser(userID: bob.id)) == .done)  // not an administrator
        // Each round, two administrators each removed at once: the store decides in the removal's
        // transaction, so one goes and the other stays.
        var survivor = ann.id
        for round in 0..<5 {
            let pair = [survivor, try addUser(store, "carl\(round)", admin: true).id]
            let results = Mutex<[Int64: AccountWriteResult]>([:])
            onThreads(2) { index in
                let result = (try? store.perform(.removeUser(userID: pair[index]))) ?? .notFound
                results.withLock { $0[pair[index]] = result }
            }
            let outcome = results.withLock { $0 }
            #expect(outcome.values.sorted { "\($0)" < "\($1)" } == [.done, .lastAdministrator], "round \(round)")
            survivor = outcome.first { $0.value == .lastAdministrator }?.key ?? survivor
            #expect(try store.users().filter(\.isAdmin).map(\.id) == [survivor], "round \(round)")
        }
        #expect(try fixture.integrityCheck() == "ok")
    }

    @Test("revoking: only the owner's, once; a new password ends the user's sessions but not their tokens", arguments: Backend.all)
    func revoke(backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        let ann = try addUser(store, "ann"), bob = try addUser(store, "bob")
        let token = Secret.make(prefix: Secret.tokenPrefix), session = Secret.make(prefix: Secret.sessionPrefix)
        guard
            case .credential(let issued) = try store.perform(
                .issue(userID: ann.id, kind: .token, label: "ci", digest: Secret.digest(token), expiresAt: 100)),
            case .credential = try store.perform(.issue(userID: ann.id, kind: .session, label: "web", digest: Secret.digest(session), expiresAt: nil))
        else {
            Issue.record("setup"); return
        }
        #expect(issued.expiresAt == 100 && !issued.isValid(at: 100) && issued.isValid(at: 99))
        #expect(try store.perform(.revoke(id: issued.id, userID: bob.id)) == .notFound)
        guard case .credential(let revoked) = try store.perform(.revoke(id: issued.id, userID: ann.id)) else { Issue.record("not revoked"); return }
        #expect(revoked.revokedAt != nil && !revoked.isValid(at: 0))
        #expect(try store.credentials(userID: ann.id, kind: .token).map(\.label) == ["ci"])
        #expect(try store.perform(.setPassword(userID: ann.id, passwordHash: try PasswordHash.make("new"))) == .done)
        #expect(try store.credential(digest: Secret.digest(session))?.0.revokedAt != nil)
        #expect(PasswordHash.verify("new", hash: try store.passwordHash(userID: ann.id) ?? ""))
    }

    @Test("a version-2 database migrates: its notes, uploads and events become unclaimed, then the first user's")
    func migratesVersion2() throws {
        let directory = try TemporaryDirectory()
        do {
            let db = try SQLiteConnection(path: directory.databasePath, flags: SQLiteConnection.readWrite)
            try db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (2);")
            try db.execute(SQLiteSchema.migrations[0])
            try db.execute(SQLiteSchema.migrations[1])
            try db.execute(
                """
                INSERT INTO notes (body, created_at, updated_at, version) VALUES ('old note', 1, 1, 1);
                INSERT INTO events (kind, note_id, note_body, note_created_at, note_updated_at, note_version, created_at)
                VALUES ('note.created', 1, 'old note', 1, 1, 1, 1);
                """)
            db.close()
        }
        let store = try SQLiteStore(dataDirectory: directory.path)
        defer { store.close() }
        #expect(try MigrationTests.schemaVersion(at: directory.databasePath) == SQLiteSchema.current)
        #expect(try store.note(id: 1, owner: .unclaimed)?.body == "old note")
        let ann = try addUser(store, "ann")
        #expect(try store.notes(NoteQuery(), owner: ann.owner).map(\.body) == ["old note"])
        #expect(try store.events(after: 0, limit: 10, owner: ann.owner)?.count == 1)
    }
}
