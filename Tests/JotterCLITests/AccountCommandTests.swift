import Foundation
import Glibc
import JotterPostgres
import Testing
import JotterServerTestSupport
import JotterTestSupport

/// `jotter users` and `jotter tokens` on a data folder, run as a user would, and the server
/// that the folder then serves.
@Suite("jotter users and tokens, on the data folder", .serialized)
struct AccountCommandTests {
    /// Runs the built `jotter` with `input` on standard input (not a terminal).
    static func jotter(_ arguments: [String], input: String = "", environment: [String: String] = ["PATH": "/usr/bin:/bin"]) throws
        -> (status: Int32, out: String, err: String)
    {
        let run = try runProgram([ServerProcess.binary.path] + arguments, environment: environment, input: Array(input.utf8), separateErrors: true)
        return (run.status, run.output, run.errors)
    }

    @Test("users add/list/passwd/remove and tokens create/list/revoke; a created token opens the server, a revoked one does not")
    func dataFolder() throws {
        let data = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: data) }
        let folder = ["--data", data.path]
        // A folder with no database yet (a mistyped --data): only users add makes one.
        let typo = data.appendingPathComponent("typo").path
        for command in [
            ["users", "list"], ["tokens", "list", "--user", "ann"], ["users", "remove", "ann", "--yes"], ["users", "list", "--database", "sqlite"],
        ] {
            let answer = try Self.jotter(command + ["--data", typo])
            #expect(answer.status == 3 && answer.err.hasPrefix("error: \(typo) holds no jotter data"), "\(command): \(answer)")
        }
        #expect(!FileManager.default.fileExists(atPath: typo))
        #expect(
            try Self.jotter(["users", "add", "ann", "--admin"] + folder, input: "short\n") == (
                1, "", "error: a password needs at least 8 characters; nothing changed\n"
            ))
        #expect(try Self.jotter(["users", "add", "ann", "--admin"] + folder, input: "ann's password\n").status == 0)
        #expect(try Self.jotter(["users", "add", "ANN"] + folder, input: "another password\n").err == "error: a user named ANN exists already\n")
        #expect(try Self.jotter(["users", "add", "bob"] + folder, input: "bob's password\n").out == "Added user bob.\n")
        let list = try Self.jotter(["users", "list"] + folder)
        #expect(list.out.contains("ann   yes    ") && list.out.contains("bob   no     "), "\(list.out)")
        #expect(list.out.split(separator: "\n").dropFirst().allSatisfy { $0.hasSuffix(" UTC") }, "\(list.out)")
        #expect(!list.out.contains("password") && !list.out.contains("argon2"))
        #expect(try Self.jotter(["users", "passwd", "nobody"] + folder, input: "whatever12\n") == (3, "", "error: no user is named nobody\n"))
        #expect(try Self.jotter(["users", "passwd", "bob"] + folder, input: "bob's new password\n").status == 0)

        let created = try Self.jotter(["tokens", "create", "--user", "ann", "--name", "laptop", "--expires", "30d"] + folder)
        #expect(created.status == 0)
        let token = created.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.hasPrefix("jot_") && token.count == 40)
        #expect(try Self.jotter(["tokens", "create", "--user", "ann", "--expires", "soon"] + folder).status == 2)
        // The lifetimes the server takes, on the data folder too: a minute to ten years.
        for lifetime in ["30s", "11y", "3651d"] {
            #expect(try Self.jotter(["tokens", "create", "--user", "ann", "--expires", lifetime] + folder).status == 2, "\(lifetime)")
        }
        let tokens = try Self.jotter(["tokens", "list", "--user", "ann"] + folder)
        #expect(tokens.out.contains("laptop") && !tokens.out.contains(token))

        let server = try ServerProcess(["--quiet", "--auth", "required"], dataDirectory: data)
        let notes = try RawHTTP(port: server.port).request("GET", "/notes", headers: [("Authorization", "Bearer \(token)")], close: true)
        #expect(notes.status == 200)
        #expect(try RawHTTP(port: server.port).request("GET", "/notes", close: true).status == 401)
        let signIn = try RawHTTP(port: server.port).request(
            "POST", "/auth/sessions", headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Array("name=bob&password=bob%27s%20new%20password".utf8), close: true)
        #expect(signIn.status == 201)
        server.signal(SIGTERM)
        _ = server.finish()

        #expect(try Self.jotter(["tokens", "revoke", "1"] + folder).out == "Revoked token 1 (laptop).\n")
        #expect(try Self.jotter(["tokens", "revoke", "99"] + folder).status == 3)
        let after = try Self.jotter(["tokens", "list", "--user", "ann"] + folder)
        #expect(after.out.split(separator: "\n").dropFirst().first?.hasSuffix("-") == false)  // REVOKED now has a date
        let restarted = try ServerProcess(["--quiet", "--auth", "required"], dataDirectory: data)
        #expect(
            try RawHTTP(port: restarted.port).request("GET", "/notes", headers: [("Authorization", "Bearer \(token)")], close: true).status == 401)
        restarted.signal(SIGTERM)
        _ = restarted.finish()

        #expect(try Self.jotter(["users", "remove", "bob"] + folder).status == 2)  // no terminal, no --yes
        #expect(try Self.jotter(["users", "remove", "bob", "--yes"] + folder).status == 0)
        let lastAdministrator = "error: ann is the last administrator: add another administrator before removing them; nothing changed\n"
        #expect(try Self.jotter(["users", "remove", "ann", "--yes"] + folder) == (4, "", lastAdministrator))
        #expect(try Self.jotter(["users", "list"] + folder).out.contains("ann"))
        #expect(!(try Self.jotter(["users", "list"] + folder).out.contains("bob")))
        for help in [["users", "--help"], ["tokens", "--help"], ["users", "add", "--help"], ["tokens", "create", "--help"]] {
            #expect(try Self.jotter(help).status == 0, "\(help)")
        }
    }

    @Test("--auth off on an address other than loopback logs a warning; the default there is required")
    func offElsewhereWarns() throws {
        func firstLines(_ arguments: [String]) throws -> String {
            let data = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: data) }
            let log = data.appendingPathComponent("serve.log")
            let process = try ChildProgram(
                [ServerProcess.binary.path, "serve", "--host", "0.0.0.0", "--port", "0", "--quiet", "--data", data.path] + arguments,
                output: .file(log))
            defer { process.stop() }
            var text = ""
            let deadline = Date().addingTimeInterval(15)
            while !text.contains("listening") || (arguments.contains("off") && !text.contains("warning")) {
                guard Date() < deadline, process.isRunning else { break }
                usleep(20_000)
                text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            }
            return text
        }
        let off = try firstLines(["--auth", "off"])
        #expect(off.contains(" warning --auth off on 0.0.0.0"), "\(off)")
        let required = try firstLines([])
        #expect(required.contains("listening") && !required.contains("warning"), "\(required)")
    }
}

/// The same commands on a PostgreSQL deployment (`--database`), and an instance on that
/// database honouring what they made.
@Suite("jotter users and tokens, on PostgreSQL", .serialized, .enabled(if: SharedBackend.available, Comment(rawValue: SharedBackend.skipMessage)))
struct PostgresAccountCommandTests {
    @Test func usersAndTokensOnTheDatabase() throws {
        let backend = try SharedBackend()
        let database = ["--database", backend.databaseURL]
        // A database with no jotter data yet (a mistyped name that exists): only users add
        // makes the store there; the others say so and leave it untouched.
        for command in [["users", "list"], ["tokens", "create", "--user", "ann"], ["users", "remove", "ann", "--yes"]] {
            let answer = try AccountCommandTests.jotter(command + database)
            #expect(answer.status == 3 && answer.err.contains("holds no jotter data"), "\(command): \(answer)")
        }
        let tables: Int64 = try PostgresConnection(url: backend.databaseURL).query(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()")[0].value(0)
        #expect(tables == 0)
        #expect(try AccountCommandTests.jotter(["users", "add", "ann", "--admin"] + database, input: "ann's password\n").status == 0)
        let list = try AccountCommandTests.jotter(["users", "list"] + database)
        #expect(list.out.contains("ann   yes    "), "\(list)")
        let created = try AccountCommandTests.jotter(["tokens", "create", "--user", "ann", "--name", "ci"] + database)
        #expect(created.status == 0, "\(created.err)")
        let token = try #require(created.out.split(separator: "\n").first { $0.hasPrefix("jot_") }.map(String.init))
        let server = try ServerProcess(backend.arguments + ["--quiet", "--auth", "required"], environment: backend.processEnvironment)
        defer { server.signal(SIGTERM); _ = server.finish() }
        let connection = try RawHTTP(port: server.port)
        #expect(try connection.request("GET", "/notes", headers: [("Authorization", "Bearer \(token)")], close: true).status == 200)
        #expect(try RawHTTP(port: server.port).request("GET", "/notes", close: true).status == 401)
        let lastAdministrator = "error: ann is the last administrator: add another administrator before removing them; nothing changed\n"
        #expect(try AccountCommandTests.jotter(["users", "remove", "ann", "--yes"] + database) == (4, "", lastAdministrator))
        #expect(try AccountCommandTests.jotter(["users", "add", "bob", "--admin"] + database, input: "bob's password\n").status == 0)
        #expect(try AccountCommandTests.jotter(["users", "remove", "ann", "--yes"] + database).status == 0)
        #expect(try AccountCommandTests.jotter(["users", "list"] + database).out.contains("ann") == false)
    }
}
