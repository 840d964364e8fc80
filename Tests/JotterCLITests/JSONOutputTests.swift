import Foundation
import Testing
import JotterAPI
import JotterClient
@testable import JotterCLI
@testable import JotterCLICore
import JotterServer
import JotterTestSupport

/// What the client commands print for scripts: JSON as `jq` prints it, numbers as numbers,
/// every list in JSON; and what they take from a pipe and refuse.
@Suite("jotter: JSON output and input from scripts")
struct JSONOutputTests {
    let commands = ClientCommandTests()

    @Test("JSON is printed as jq prints it: \"key\": value, two spaces, [] and {} when empty, keys sorted")
    func jqStyle() async throws {
        try await withApp { app in
            let empty = await commands.jotter(["notes", "list", "--json"], app: app)
            #expect(empty.out == "{\n  \"next\": null,\n  \"notes\": []\n}\n")
            let hello = await commands.jotter(["hello", "a: b, {c} [d] \"e\" \\", "--json"], app: app)
            #expect(hello.out == "{\n  \"message\": \"Hello a: b, {c} [d] \\\"e\\\" \\\\!\"\n}\n")
        }
        #expect(
            ClientOptions.indented(Array(#"{"a":[1,{"b":{}}],"c":"x,y:z"}"#.utf8))
                == "{\n  \"a\": [\n    1,\n    {\n      \"b\": {}\n    }\n  ],\n  \"c\": \"x,y:z\"\n}")
    }

    @Test("export --json gives its counts and bytes as numbers")
    func exportNumbers() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withApp { app in
            _ = await commands.jotter(["notes", "add", "one"], app: app)
            let archive = folder.appendingPathComponent("notes.tar").path
            let export = await commands.jotter(["export", archive, "--json"], app: app)
            try #require(export.status == 0, "\(export.err)")
            let summary = try #require(try JSONSerialization.jsonObject(with: Data(export.out.utf8)) as? [String: Any])
            #expect(summary["notes"] as? Int == 1 && summary["files"] as? Int == 0, "\(export.out)")
            #expect(summary["bytes"] is Int && !(summary["bytes"] is String), "\(export.out)")
            #expect(export.out.contains("\"notes\": 1"), "\(export.out)")
        }
    }

    @Test(
        "export refuses a name whose extension is another format's, before fetching anything",
        arguments: ["notes.zip", "notes.tar.bz2", "notes.json"])
    func exportExtension(_ name: String) async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent(name).path
        let refused = await commands.jotter(["export", path], app: nil)
        #expect(refused.status == ExitCode.usage, "\(refused.err)")
        #expect(
            refused.err.hasPrefix("error: \(path): jotter export writes a tar archive; name it .tar, or .tar.gz or .tgz for gzip"), "\(refused.err)")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("export takes .tar, .tar.gz, .tgz and a name without an extension", arguments: ["notes.tar", "notes.tar.gz", "notes.TGZ", "notes"])
    func exportNames(_ name: String) async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try await withApp { app in
            let export = await commands.jotter(["export", folder.appendingPathComponent(name).path], app: app)
            #expect(export.status == 0, "\(export.err)")
        }
    }

    @Test("restore --json reports the backup's own id and time from its backup.json")
    func restoreReportsTheBackup() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let backupPath = folder.appendingPathComponent("b").path
        try await withApp { app in
            _ = await commands.jotter(["notes", "add", "kept"], app: app)
            let backup = await commands.jotter(["backup", backupPath], app: app)
            try #require(backup.status == 0, "\(backup.err)")
        }
        let written = try JSONDecoder().decode(Backup.self, from: Data(contentsOf: URL(fileURLWithPath: backupPath + "/backup.json")))
        #expect(!written.id.isEmpty)
        // Restored later: the report is about the backup, not about now.
        sleep(1)
        let restore = await commands.jotter(["restore", backupPath, "--data", folder.appendingPathComponent("t").path, "--json"], app: nil)
        try #require(restore.status == 0, "\(restore.err)")
        let restored = try JSONDecoder().decode(BackupEnvelope.self, from: Data(restore.out.utf8)).backup
        #expect(restored.id == written.id)
        #expect(restored.createdAt == written.createdAt)
        #expect(restored.notes == 1)
    }

    @Test("users list and tokens list --json, on the data folder and through the server, as GET /users and /auth/tokens give them")
    func accountLists() async throws {
        try await withApp(configure: { $0.auth = .required }) { app in
            _ = try app.addUser("ann", password: "ann's password", admin: true)
            let data = ["--data", app.dataDirectory.path]
            let created = await commands.jotter(["tokens", "create", "--user", "ann", "--name", "ci"] + data, app: nil)
            try #require(created.status == 0, "\(created.err)")
            let token = created.out.trimmingCharacters(in: .whitespacesAndNewlines)

            let users = await commands.jotter(["users", "list", "--json"] + data, app: nil)
            try #require(users.status == 0, "\(users.err)")
            let userList = try JSONDecoder().decode(UserList.self, from: Data(users.out.utf8))
            #expect(userList.users.map(\.name) == ["ann"] && userList.users[0].admin)
            let tokens = await commands.jotter(["tokens", "list", "--user", "ann", "--json"] + data, app: nil)
            try #require(tokens.status == 0, "\(tokens.err)")
            let tokenList = try JSONDecoder().decode(TokenList.self, from: Data(tokens.out.utf8))
            #expect(tokenList.tokens.map(\.label) == ["ci"] && tokenList.tokens[0].revokedAt == nil)
            #expect(tokens.out.contains("\"label\": \"ci\""))

            let remoteUsers = await commands.jotter(
                ["users", "list", "--json", "--token", token], app: app, environment: ["JOTTER_SERVER": "http://127.0.0.1:\(app.port)"])
            try #require(remoteUsers.status == 0, "\(remoteUsers.err)")
            #expect(try JSONDecoder().decode(UserList.self, from: Data(remoteUsers.out.utf8)).users.map(\.name) == ["ann"])
            let remoteTokens = await commands.jotter(
                ["tokens", "list", "--json", "--token", token, "--server", "http://127.0.0.1:\(app.port)"], app: nil)
            try #require(remoteTokens.status == 0, "\(remoteTokens.err)")
            #expect(try JSONDecoder().decode(TokenList.self, from: Data(remoteTokens.out.utf8)).tokens.count == 1)
        }
    }

    @Test("notes add - drops the one newline a pipe ends with, and only that one")
    func pipedNewline() async throws {
        try await withApp { app in
            let client = JotterClient(baseURL: app.baseURL)
            for (input, stored) in [("x\n", "x"), ("x", "x"), ("two\nlines\n\n", "two\nlines\n"), ("\n", "")] {
                let added = await commands.jotter(["notes", "add", "-", "--json"], app: app, input: input)
                try #require(added.status == 0, "\(added.err)")
                let note = try JSONDecoder().decode(NoteEnvelope.self, from: Data(added.out.utf8)).note
                #expect(try await client.notes.get(note.id).body == stored, "\(input.debugDescription)")
            }
        }
    }
}
