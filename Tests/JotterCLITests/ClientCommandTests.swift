import Foundation
import Synchronization
import Testing
import JotterAPI
import JotterClient
@testable import JotterCLI
@testable import JotterCLICore
import JotterServer
import JotterServerTestSupport
import JotterTestSupport

/// The client commands in-process against a live server on port 0.
@Suite("jotter client commands, in-process")
struct ClientCommandTests {
    struct Result {
        var status: Int32
        var out: String
        var err: String
    }

    /// Runs `jotter ARGUMENTS --server <app>` and captures what it prints.
    func jotter(
        _ arguments: [String], app: TestApp?, environment: [String: String] = [:], terminal: Bool = false,
        outputTerminal: Bool = false, input: String = ""
    ) async -> Result {
        let captured = Captured()
        var console = captured.console
        console.isTerminal = terminal
        console.outputIsTerminal = outputTerminal
        console.readInput = { Array(input.utf8) }
        var environment = environment
        if let app { environment["JOTTER_SERVER"] = "http://127.0.0.1:\(app.port)" }
        let status = await JotterCommandLine.run(arguments, environment: environment, console: console)
        return Result(status: status, out: captured.out.withLock { $0 }, err: captured.err.withLock { $0 })
    }

    @Test func hello() async throws {
        try await withApp { app in
            #expect(await jotter(["hello", "Bob", "Smith"], app: app).out == "Hello Bob Smith!\n")
            #expect(await jotter(["hello", "Bob", "--json"], app: app).out == "{\n  \"message\": \"Hello Bob!\"\n}\n")
        }
    }

    @Test("notes: add, list, show, edit, rm, with tables and JSON")
    func notes() async throws {
        try await withApp { app in
            #expect(await jotter(["notes", "list"], app: app).out == "No notes yet.\n")
            #expect(await jotter(["notes", "add", "Buy", "milk"], app: app).out == "Added note 1.\n")
            #expect(await jotter(["notes", "add", "-"], app: app, input: "from stdin\nsecond line").out == "Added note 2.\n")
            let list = await jotter(["notes", "list"], app: app)
            let lines = list.out.split(separator: "\n")
            #expect(lines.count == 3)
            #expect(lines[0].hasPrefix("ID  UPDATED                  BODY"))
            #expect(lines[1].contains(" UTC  from stdin"), "times say their zone")
            #expect(lines[1].hasPrefix("2 ") && lines[1].hasSuffix("  from stdin…"))
            #expect(lines[2].hasSuffix("  Buy milk"))
            #expect(await jotter(["notes", "list", "--search", "milk"], app: app).out.contains("Buy milk"))
            #expect(await jotter(["notes", "list", "--search", "nothing"], app: app).out == "No notes match 'nothing'.\n")
            let json = await jotter(["notes", "list", "--limit", "1", "--json"], app: app)
            let page = try JSONDecoder().decode(NoteList.self, from: Data(json.out.utf8))
            #expect(page.notes.map(\.body) == ["from stdin\nsecond line"])
            #expect(page.next?.hasPrefix("/notes?") == true)  // kept: there is one more

            let show = await jotter(["notes", "show", "1"], app: app)
            #expect(show.out.hasPrefix("note 1 · version 1 · created "))
            #expect(show.out.hasSuffix("\n\nBuy milk\n"))
            #expect(await jotter(["notes", "edit", "1", "Buy", "oat", "milk"], app: app).out == "Saved note 1 (version 2).\n")
            // `-` alone reads standard input, as `notes add -` does.
            #expect(await jotter(["notes", "edit", "2", "-"], app: app, input: "piped in\n").out == "Saved note 2 (version 2).\n")
            #expect(await jotter(["notes", "show", "2", "--json"], app: app).out.contains(#""body": "piped in""#))
            #expect(await jotter(["notes", "rm", "1"], app: app).out == "Deleted note 1.\n")
            let gone = await jotter(["notes", "show", "1"], app: app)
            #expect(gone.status == ExitCode.notFound)
            #expect(gone.err == "error: note 1 does not exist\n")
        }
    }

    @Test("notes edit opens $EDITOR; unchanged text saves nothing")
    func editor() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let script = try makeScript(folder, "editor", #"printf 'edited in the editor\n' > "$1""#)
        try await withApp { app in
            _ = await jotter(["notes", "add", "original"], app: app)
            let edited = await jotter(["notes", "edit", "1"], app: app, environment: ["EDITOR": script])
            #expect(edited.out == "Saved note 1 (version 2).\n", "\(edited.err)")
            let note = try await JotterClient(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!).notes.get("1")
            #expect(note.body == "edited in the editor")
            let same = await jotter(["notes", "edit", "1"], app: app, environment: ["EDITOR": "true"])
            #expect(same.out == "No change: note 1 left as it was.\n")
            let failing = await jotter(["notes", "edit", "1"], app: app, environment: ["EDITOR": "false"])
            #expect(failing.status == ExitCode.failure)
            #expect(failing.err.contains("exited with status 1; nothing was saved"))
        }
    }

    @Test("notes edit: a change on the server meanwhile is a conflict (exit 4); the text is kept")
    func editConflict() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let started = folder.appendingPathComponent("started"), proceed = folder.appendingPathComponent("proceed")
        let script = try makeScript(
            folder, "slow-editor",
            """
            printf 'my version' > "$1"; touch '\(started.path)'
            while [ ! -e '\(proceed.path)' ]; do sleep 0.02; done
            """)
        try await withApp { app in
            _ = await jotter(["notes", "add", "original"], app: app)
            let editing = Task { await jotter(["notes", "edit", "1"], app: app, environment: ["EDITOR": script]) }
            while !FileManager.default.fileExists(atPath: started.path) { try await Task.sleep(for: .milliseconds(20)) }
            _ = try await JotterClient(baseURL: URL(string: "http://127.0.0.1:\(app.port)")!).notes.update("1", body: "someone else's")
            _ = FileManager.default.createFile(atPath: proceed.path, contents: nil)
            let result = await editing.value
            #expect(result.status == ExitCode.conflict)
            #expect(
                result.err.hasPrefix(
                    "error: note 1 was changed on the server while you edited it (you started from version 1); nothing was saved. Your text is in "))
            let kept = try #require(result.err.split(separator: " ").first { $0.hasSuffix(".txt.") }.map { String($0.dropLast()) })
            #expect(try String(contentsOfFile: kept, encoding: .utf8) == "my version")
            try? FileManager.default.removeItem(atPath: kept)
        }
    }

    @Test("notes watch prints each change until it is stopped")
    func watch() async throws {
        try await withApp { app in
            let captured = Captured()
            let environment = ["JOTTER_SERVER": "http://127.0.0.1:\(app.port)"]
            let watching = Task {
                await JotterCommandLine.run(["notes", "watch", "--since", "0"], environment: environment, console: captured.console)
            }
            _ = await jotter(["notes", "add", "watched"], app: app)
            _ = await jotter(["notes", "rm", "1"], app: app)
            for _ in 0..<500 where captured.out.withLock({ $0.split(separator: "\n").count }) < 2 { try await Task.sleep(for: .milliseconds(10)) }
            watching.cancel()
            #expect(await watching.value == ExitCode.success)
            let lines = captured.out.withLock { $0 }.split(separator: "\n")
            #expect(lines.count == 2)
            // The event id (for --since) first, then the time of the event.
            #expect(lines.first?.hasPrefix("event 1  ") == true && lines.first?.hasSuffix("  created note 1  watched") == true, "\(lines)")
            #expect(lines.last?.hasPrefix("event 2  ") == true && lines.last?.hasSuffix("  deleted note 1  watched") == true, "\(lines)")
        }
    }

    /// The lines `notes watch --since 0 ARGUMENTS` prints once it has shown `count`.
    func watched(_ app: TestApp, _ arguments: [String] = [], count: Int) async throws -> [Substring] {
        let captured = Captured()
        let environment = ["JOTTER_SERVER": "http://127.0.0.1:\(app.port)"]
        let watching = Task {
            await JotterCommandLine.run(["notes", "watch", "--since", "0"] + arguments, environment: environment, console: captured.console)
        }
        for _ in 0..<500 where captured.out.withLock({ $0.split(separator: "\n").count }) < count { try await Task.sleep(for: .milliseconds(10)) }
        watching.cancel()
        _ = await watching.value
        return captured.out.withLock { $0 }.split(separator: "\n")
    }

    @Test("notes watch --since shows when a deletion happened, not when it was replayed (--json: deleted_at)")
    func watchReplaysDeletionTime() async throws {
        try await withApp { app in
            _ = await jotter(["notes", "add", "gone"], app: app)
            _ = await jotter(["notes", "rm", "1"], app: app)
            try await Task.sleep(for: .milliseconds(1200))
            let replayedAt = Timestamp.format(Int64(Date().timeIntervalSince1970))
            let json = try await watched(app, ["--json"], count: 2)
            let line = try #require(json.last.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] } ?? nil)
            #expect(line["event"] as? String == "note.deleted")
            let deletedAt = try #require(line["deleted_at"] as? String)
            #expect(deletedAt < replayedAt, "deleted \(deletedAt), replayed \(replayedAt)")
            let text = try await watched(app, count: 2)
            #expect(text.last?.hasPrefix("event 2  \(deletedAt) UTC  deleted note 1") == true, "\(text)")
        }
    }

    @Test("every failure is one line with its own exit code")
    func exitCodes() async throws {
        let down = await jotter(["notes", "list", "--server", "http://127.0.0.1:\(try TestApp.unusedPort())"], app: nil)
        #expect(down.status == ExitCode.unreachable)
        #expect(down.err.hasPrefix("error: cannot connect to 127.0.0.1:"))
        #expect(down.err.hasSuffix("(connection refused): is the Jotter server running there? (--server URL or JOTTER_SERVER)\n"))
        #expect(down.err.split(separator: "\n").count == 1)
        try await withApp(configure: { $0.maxUploadSize = 1024 }) { app in
            #expect(await jotter(["notes", "rm", "42"], app: app).status == ExitCode.notFound)
            let folder = try scratchFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let big = folder.appendingPathComponent("big.bin")
            try Data(count: 4096).write(to: big)
            let refused = await jotter(["upload", big.path], app: app)
            #expect(refused.status == ExitCode.refused)
            #expect(refused.err.hasPrefix("error: the server refused the request: "))
            let missing = await jotter(["upload", folder.appendingPathComponent("nope").path], app: app)
            #expect(missing.status == ExitCode.failure)
            #expect(missing.err.contains("nope"))
            // A 409, the state not allowing it now (an attachment of a note in the trash), is a conflict.
            let small = folder.appendingPathComponent("small.txt")
            try Data("a".utf8).write(to: small)
            _ = await jotter(["notes", "add", "n"], app: app)
            let attached = await jotter(["upload", small.path, "--note", "1", "--json"], app: app)
            let id = String(attached.out.split(separator: "\"").drop { $0 != "id" }.dropFirst(2).first ?? "")
            try #require(!id.isEmpty, "\(attached.out)")
            _ = await jotter(["notes", "rm", "1"], app: app)
            let trashed = await jotter(["uploads", "rm", id], app: app)
            #expect(trashed.status == ExitCode.conflict, "\(trashed.err)")
            #expect(trashed.err.hasPrefix("error: ") && trashed.err.contains("trash"), "\(trashed.err)")
        }
        for arguments in [
            ["notes"], ["notes", "frob"], ["hello"], ["echo", "-d", "a=1", "--json-body", "{}"], ["notes", "list", "--limit", "0"],
            ["hello", "x", "--server", "ftp://host"], ["download"], ["notes", "show", "1", "2"],
        ] {
            let result = await jotter(arguments, app: nil)
            #expect(result.status == ExitCode.usage, "\(arguments)")
            #expect(result.err.hasPrefix("error: ") && result.err.hasSuffix(" --help'.\n"), "\(arguments): \(result.err)")
            #expect(result.err.split(separator: "\n").count == 2, "\(arguments): \(result.err)")
        }
    }

    @Test("--help on every command and subcommand; jotter --help lists the exit codes")
    func help() async {
        for command in JotterCommandLine.commands {
            let paths = command.subcommands.isEmpty ? [[command.name]] : command.subcommands.map { [command.name, $0.name] } + [[command.name]]
            for path in paths {
                let result = await jotter(path + ["--help"], app: nil)
                #expect(result.status == 0)
                #expect(result.out.hasPrefix("USAGE: jotter \(path.joined(separator: " "))"), "\(path)")
                #expect(await jotter(["help"] + path, app: nil).out == result.out)
            }
        }
        let top = await jotter(["--help"], app: nil)
        for text in ["notes", "upload", "download", "echo", "hello", "3  not found", "4  conflict", "5  server unreachable", "6  refused"] {
            #expect(top.out.contains(text), "\(text)")
        }
    }
}

/// Runs `body` against a fresh server.
func withApp(configure: (inout ServerConfiguration) -> Void = { _ in }, _ body: (TestApp) async throws -> Void) async throws {
    try await TestApp.with(configure: configure, body)
}

/// An executable shell script named `name` in `folder` that runs `body`; its path.
func makeScript(_ folder: URL, _ name: String, _ body: String) throws -> String {
    let url = folder.appendingPathComponent(name)
    try Data("#!/bin/sh\n\(body)\n".utf8).write(to: url)
    try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
    return url.path
}
