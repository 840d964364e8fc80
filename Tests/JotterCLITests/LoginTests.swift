import Foundation
import Glibc
import Testing
import JotterServer
import JotterServerTestSupport
import JotterTestSupport

/// `jotter login` / `logout`, `JOTTER_TOKEN`, and the client commands signed in, against a
/// server that requires credentials.
@Suite("jotter login, signed-in commands", .serialized)
struct LoginTests {
    @Test("login keeps a 0600 token that every command uses; JOTTER_TOKEN wins; logout revokes and forgets it")
    func loginLogout() throws {
        try TestApp.with(configure: { $0.auth = .required }) { app in
            try app.addUser("ann", password: "ann's password")
            let home = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: home) }
            var environment = ["HOME": home.path, "PATH": "/usr/bin:/bin", "JOTTER_SERVER": "http://127.0.0.1:\(app.port)"]
            func jotter(_ arguments: [String], input: String = "") throws -> (status: Int32, out: String, err: String) {
                try AccountCommandTests.jotter(arguments, input: input, environment: environment)
            }
            let refused = try jotter(["notes", "list"])
            #expect(refused.status == 1)
            #expect(refused.err.contains("sign in with jotter login"), "\(refused.err)")
            #expect(try jotter(["login", "--name", "ann"], input: "wrong\n") == (1, "", "error: the name or the password is wrong\n"))
            #expect(try jotter(["login"], input: "ann's password\n").status == 2)  // no terminal: --name is needed

            let login = try jotter(["login", "--name", "ann"], input: "ann's password\n")
            #expect(login == (0, "Signed in to http://127.0.0.1:\(app.port) as ann.\n", ""))
            let file = home.path + "/.config/jotter/tokens"
            var info = stat()
            #expect(stat(file, &info) == 0 && info.st_mode & 0o777 == 0o600)
            let kept = try String(contentsOfFile: file, encoding: .utf8)
            #expect(kept.contains("jot_") && !kept.contains("password"))

            #expect(try jotter(["notes", "add", "signed", "in"]).status == 0)
            #expect(try jotter(["notes", "list"]).out.contains("signed in"))
            environment["JOTTER_TOKEN"] = "jot_not_a_real_token"
            #expect(try jotter(["notes", "list"]).status == 1)
            environment["JOTTER_TOKEN"] = nil

            #expect(try jotter(["logout"]) == (0, "Signed out of http://127.0.0.1:\(app.port).\n", ""))
            #expect(!(try String(contentsOfFile: file, encoding: .utf8)).contains("jot_"))
            // The token itself was revoked, not only forgotten.
            let token = try #require(kept.firstMatch(of: /jot_[0-9A-Za-z]+/).map { String($0.output) })
            #expect(try app.request("GET", "/notes", token: token).status == 401)
            #expect(try jotter(["logout"]).out == "Not signed in to http://127.0.0.1:\(app.port).\n")
        }
    }

    @Test("users and tokens through a server: an administrator's token manages users, anyone their own tokens; others get 403")
    func throughTheServer() throws {
        try TestApp.with(configure: { $0.auth = .required }) { app in
            try app.addUser("root", password: "root's password", admin: true)
            try app.addUser("ann", password: "ann's password")
            let admin = try app.token("root", password: "root's password"), ann = try app.token("ann", password: "ann's password")
            let server = "http://127.0.0.1:\(app.port)"
            let home = try scratchFolder()  // Foundation keeps caches under $HOME
            defer { try? FileManager.default.removeItem(at: home) }
            func jotter(_ arguments: [String], token: String, input: String = "") throws -> (status: Int32, out: String, err: String) {
                try AccountCommandTests.jotter(
                    arguments + ["--server", server], input: input,
                    environment: ["PATH": "/usr/bin:/bin", "HOME": home.path, "JOTTER_TOKEN": token])
            }
            #expect(try jotter(["users", "add", "carl"], token: admin, input: "carl's password\n") == (0, "Added user carl.\n", ""))
            #expect(try jotter(["users", "list"], token: admin).out.contains("carl  no"))
            let refused = try jotter(["users", "list"], token: ann)
            #expect(refused.status == 1 && refused.err.contains("only an administrator"), "\(refused.err)")
            #expect(try jotter(["users", "passwd", "carl"], token: admin, input: "carl's new password\n").status == 0)
            #expect(try app.token("carl", password: "carl's new password").hasPrefix("jot_"))

            // --user through the server is refused, not ignored (the token would be ann's).
            for command in [["tokens", "create", "--user", "carl"], ["tokens", "list", "--user", "carl"]] {
                let refused = try jotter(command, token: ann)
                #expect(refused.status == 2 && refused.err.contains("--user works on the data folder"), "\(command): \(refused)")
            }
            let created = try jotter(["tokens", "create", "--name", "script", "--expires", "1d"], token: ann)
            #expect(created.status == 0 && created.out.hasPrefix("jot_"))
            let listed = try jotter(["tokens", "list"], token: ann)
            #expect(listed.out.contains("script") && !listed.out.contains(created.out.trimmingCharacters(in: .whitespacesAndNewlines)))
            // Aligned however long the times the server sends: every column starts where its header does.
            let rows = listed.out.split(separator: "\n").map(String.init)
            let header = try #require(rows.first)
            for column in ["LABEL", "CREATED", "LAST USED", "EXPIRES", "REVOKED"] {
                let start = try #require(header.range(of: column)).lowerBound.utf16Offset(in: header)
                for row in rows.dropFirst() {
                    let index = row.index(row.startIndex, offsetBy: start, limitedBy: row.endIndex) ?? row.endIndex
                    #expect(
                        index == row.startIndex || row[row.index(before: index)] == " " && (index == row.endIndex || row[index] != " "),
                        "\(column) in \(listed.out)")
                }
            }
            #expect(rows.dropFirst().allSatisfy { $0.contains(" UTC") }, "\(listed.out)")
            let id = try #require(listed.out.split(separator: "\n").dropFirst().first(where: { $0.contains("script") })?.split(separator: " ").first)
            #expect(try jotter(["tokens", "revoke", String(id)], token: ann).out == "Revoked token \(id) (script).\n")
            #expect(try app.request("GET", "/notes", token: created.out.trimmingCharacters(in: .whitespacesAndNewlines)).status == 401)
            #expect(try jotter(["users", "remove", "carl", "--yes"], token: admin).status == 0)
            // The server's detail, as it said it.
            #expect(
                try jotter(["users", "remove", "root", "--yes"], token: admin) == (
                    4, "", "error: root is the last administrator: add another administrator before removing them; nothing changed\n"
                ))
            #expect(try jotter(["users", "list"], token: admin).out.contains("root"))
            #expect(!(try jotter(["users", "list"], token: admin).out.contains("carl")))
        }
    }
}
