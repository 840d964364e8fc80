import Foundation
import Glibc
import Synchronization
import Testing
import JotterAPI
import JotterClient
@testable import JotterCLI
@testable import JotterCLICore
import JotterServerTestSupport
import JotterTestSupport

/// The client commands behave as the tools users know (gh, kubectl, curl) and say what is
/// wrong in words a user knows.
@Suite("jotter client commands: conventions and honest errors")
struct CLIBehaviourTests {
    let commands = ClientCommandTests()

    func jotter(_ arguments: [String], app: TestApp?, outputTerminal: Bool = false, input: String = "") async -> ClientCommandTests.Result {
        await commands.jotter(arguments, app: app, outputTerminal: outputTerminal, input: input)
    }

    @Test("--server host:port without a scheme, and client options before the command")
    func serverAndGlobalOptions() async throws {
        try await withApp { app in
            _ = await jotter(["notes", "add", "first"], app: app)
            let bare = await commands.jotter(["notes", "list", "--server", "127.0.0.1:\(app.port)"], app: nil)
            #expect(bare.status == 0 && bare.out.contains("first"), "\(bare.err)")
            let before = await commands.jotter(["--server", "127.0.0.1:\(app.port)", "--json", "notes", "list"], app: nil)
            #expect(before.status == 0, "\(before.err)")
            let listed = try JSONDecoder().decode(NoteList.self, from: Data(before.out.utf8))
            #expect(listed.notes.map(\.body) == ["first"])
            let equals = await commands.jotter(["--server=http://127.0.0.1:\(app.port)", "hello", "Bob"], app: nil)
            #expect(equals.out == "Hello Bob!\n")
        }
    }

    @Test("--token before the command is read as after it; --json on a command that prints no JSON is a usage error, the lists print it")
    func globalTokenAndRefusedJSON() async throws {
        try await withApp(configure: { $0.auth = .required }) { app in
            try app.addUser("ann", password: "correct horse", admin: true)
            let token = try app.token("ann", password: "correct horse")
            _ = try app.request("POST", "/notes", token: token, body: "body=mine")
            let server = "http://127.0.0.1:\(app.port)"
            for arguments in [
                ["--token", token, "notes", "list"], ["--token=\(token)", "notes", "list"],
                ["--server", server, "--token", token, "--json", "notes", "list"],
            ] {
                let listed = await commands.jotter(arguments, app: nil, environment: ["JOTTER_SERVER": server])
                #expect(listed.status == 0, "\(arguments): \(listed.err)")
                #expect(listed.out.contains("mine"), "\(arguments)")
            }
            // The lists print JSON (as every list does); the commands that print no JSON refuse it.
            for arguments in [["users", "list", "--json"], ["tokens", "list", "--json"], ["--json", "tokens", "list"]] {
                let listed = await commands.jotter(arguments + ["--server", server, "--token", token], app: nil)
                #expect(listed.status == 0 && listed.out.hasPrefix("{\n  \""), "\(arguments): \(listed.out)\(listed.err)")
            }
            for arguments in [
                ["tokens", "create", "--json"], ["--json", "users", "passwd", "ann"], ["login", "--name", "ann", "--json"],
                ["logout", "--json"],
            ] {
                let refused = await commands.jotter(arguments + ["--server", server, "--token", token], app: nil)
                #expect(refused.status == ExitCode.usage, "\(arguments): \(refused.out)")
                #expect(refused.err.hasPrefix("error: unknown option '--json'"), "\(arguments): \(refused.err)")
                #expect(refused.out.isEmpty, "\(arguments)")
            }
        }
    }

    @Test("notes add -- --help adds the note; a repeated flag is fine; a usage error is one line and a pointer to --help")
    func parsing() async throws {
        try await withApp { app in
            #expect(await jotter(["notes", "add", "--", "--help"], app: app).out == "Added note 1.\n")
            let twice = await jotter(["notes", "show", "1", "--json", "--json"], app: app)
            #expect(twice.status == 0, "\(twice.err)")
            let note = try JSONDecoder().decode(NoteEnvelope.self, from: Data(twice.out.utf8)).note
            #expect(note.body == "--help")
            let wrong = await jotter(["notes", "list", "--bogus"], app: app)
            #expect(wrong.status == ExitCode.usage)
            #expect(wrong.err == "error: unknown option '--bogus'\nSee 'jotter notes list --help'.\n")
        }
    }

    @Test("notes list: how many more and how to see them; --all, --order, --after; --json keeps next")
    func listing() async throws {
        try await withApp { app in
            let client = JotterClient(baseURL: app.baseURL)
            for index in 1...7 { _ = try await client.notes.create("note \(index)") }
            let first = await jotter(["notes", "list", "--limit", "3"], app: app)
            #expect(first.out.split(separator: "\n").count == 4)
            #expect(first.err == "4 more notes: jotter notes list --after 5 (or --all)\n")
            let json = try JSONDecoder().decode(
                NoteList.self, from: Data(await jotter(["notes", "list", "--limit", "3", "--json"], app: app).out.utf8))
            #expect(json.notes.map(\.id) == ["7", "6", "5"])
            #expect(json.next?.contains("after=5") == true)
            let after = await jotter(["notes", "list", "--after", "5", "--limit", "2", "--order", "newest"], app: app)
            #expect(after.out.split(separator: "\n").dropFirst().map { $0.split(separator: " ").first! } == ["4", "3"])
            let all = try JSONDecoder().decode(
                NoteList.self, from: Data(await jotter(["notes", "list", "--all", "--json", "--order", "oldest"], app: app).out.utf8))
            #expect(all.notes.map(\.id) == ["1", "2", "3", "4", "5", "6", "7"])
            #expect(all.next == nil)
            #expect(await jotter(["notes", "list", "--all"], app: app).err.isEmpty)
            #expect(await jotter(["notes", "list", "--all", "--limit", "2"], app: app).status == ExitCode.usage)
        }
    }

    @Test("notes rm takes several ids; one that fails is reported and the others are deleted")
    func removeSeveral() async throws {
        try await withApp { app in
            for text in ["a", "b", "c"] { _ = await jotter(["notes", "add", text], app: app) }
            let removed = await jotter(["notes", "rm", "1", "42", "3"], app: app)
            #expect(removed.out == "Deleted note 1.\nDeleted note 3.\n")
            #expect(removed.err == "error: note 42 does not exist\n")
            #expect(removed.status == ExitCode.notFound)
            let left = try await JotterClient(baseURL: app.baseURL).notes.list()
            #expect(left.notes.map(\.id) == ["2"])
        }
    }

    @Test("on a terminal, control characters in notes are made visible; in a pipe and in JSON they are kept")
    func controlCharacters() async throws {
        try await withApp { app in
            let hostile = "red \u{1B}[31malert\u{1B}[0m\u{07} \u{9B}2J"
            _ = try await JotterClient(baseURL: app.baseURL).notes.create(hostile)
            let shown = await jotter(["notes", "show", "1"], app: app, outputTerminal: true)
            #expect(shown.out.hasSuffix("\n\nred ^[[31malert^[[0m^G <U+009B>2J\n"), "\(shown.out)")
            let listed = await jotter(["notes", "list"], app: app, outputTerminal: true)
            #expect(listed.out.contains("red ^[[31malert^[[0m^G <U+009B>2J"))
            #expect(!listed.out.contains("\u{1B}") && !shown.out.contains("\u{1B}"))
            #expect(await jotter(["notes", "show", "1"], app: app).out.hasSuffix(hostile + "\n"))
        }
    }

    @Test("upload checks every path before sending any; a file over the limit is exit 6 with the server's reason")
    func uploadChecks() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let good = folder.appendingPathComponent("a.txt")
        try Data("a".utf8).write(to: good)
        try await withApp(configure: { $0.maxUploadSize = 1 << 20 }) { app in
            // Not "/nonexistent": on Debian that is the home of system accounts, and a service's
            // process may create it while the tests run (it did once, and this test saw a folder).
            let absent = folder.appendingPathComponent("absent.txt").path
            let missing = await jotter(["upload", good.path, absent], app: app)
            #expect(missing.status == ExitCode.failure)
            #expect(missing.err == "error: cannot read \(absent): no such file or not readable; nothing was uploaded\n")
            let stored = try await JotterClient(baseURL: app.baseURL).uploads.list()
            #expect(stored.isEmpty)

            let big = folder.appendingPathComponent("big.bin")
            _ = FileManager.default.createFile(atPath: big.path, contents: nil)
            #expect(truncate(big.path, 2 << 30) == 0)  // 2 GiB, sparse
            let refused = await jotter(["upload", big.path], app: app)
            #expect(refused.status == ExitCode.refused)
            #expect(
                refused.err
                    == "error: the server refused the request: the request body is larger than the upload limit of 1048576 bytes (--max-upload-size)\n"
            )
        }
    }

    @Test("download never touches another file without --force; -o - writes to standard output; --json numbers are numbers")
    func download() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("utf8.txt")
        try Data("Grüße aus Köln\n".utf8).write(to: source)
        try await withApp { app in
            let upload = try await JotterClient(baseURL: app.baseURL).uploads.upload(fileAt: source)
            let target = folder.appendingPathComponent("target.txt")
            try Data("other!".utf8).write(to: target)  // six unrelated bytes
            let refused = await jotter(["download", upload.id, "-o", target.path], app: app)
            #expect(refused.status == ExitCode.failure)
            #expect(
                refused.err
                    == "error: \(target.path) already exists and is not upload \(upload.id): it was left untouched (--force replaces it, -o another path)\n"
            )
            #expect(try Data(contentsOf: target) == Data("other!".utf8))

            let forced = await jotter(["download", upload.id, "-o", target.path, "--force", "--json"], app: app)
            #expect(forced.status == 0, "\(forced.err)")
            #expect(forced.out == "{\n  \"already_complete\": false,\n  \"path\": \"\(target.path)\",\n  \"resumed_from\": 0,\n  \"size\": 18\n}\n")
            #expect(try Data(contentsOf: target) == Data(contentsOf: source))
            let again = await jotter(["download", upload.id, "-o", target.path], app: app)
            #expect(again.out == "\(target.path) already is \(upload.id) (same SHA-256): nothing to download\n")
            let intoFolder = await jotter(["download", upload.id, "-o", folder.path], app: app)
            #expect(intoFolder.status == 0, "\(intoFolder.err)")
            #expect(intoFolder.out == "\(folder.path)/utf8.txt already is \(upload.id) (same SHA-256): nothing to download\n")

            let bytes = Mutex<[UInt8]>([])
            let captured = Captured()
            let console = Console(
                out: { text in captured.out.withLock { $0 += text } }, err: { text in captured.err.withLock { $0 += text } },
                outBytes: { chunk in bytes.withLock { $0 += chunk } })
            let status = await JotterCommandLine.run(
                ["download", upload.id, "-o", "-"], environment: ["JOTTER_SERVER": "127.0.0.1:\(app.port)"],
                console: console)
            #expect(status == 0)
            #expect(bytes.withLock { $0 } == Array("Grüße aus Köln\n".utf8))
            #expect(captured.out.withLock { $0 }.isEmpty)
        }
    }

    @Test("echo: the README's -d with -F, -H, -d @file, -F with ;type=; --json means JSON output only")
    func echo() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let photo = folder.appendingPathComponent("photo.jpg")
        try Data([0xFF, 0xD8, 0xFF]).write(to: photo)
        let form = folder.appendingPathComponent("form.txt")
        try Data("a=1&b=two".utf8).write(to: form)
        try await withApp { app in
            let mixed = await jotter(["echo", "-X", "PUT", "-d", "name=Bob & Alice", "-F", "file=@\(photo.path);type=image/x-test"], app: app)
            try #require(mixed.status == 0, "\(mixed.err)")
            let echoed = try JSONDecoder().decode(EchoResponse.self, from: Data(mixed.out.utf8))
            #expect(echoed.method == "PUT")
            #expect(echoed.form == ["name": ["Bob & Alice"]])
            #expect(echoed.files["file"]?.first?.contentType == "image/x-test")
            #expect(echoed.files["file"]?.first?.filename == "photo.jpg")

            let raw = await jotter(["echo", "-d", "@\(form.path)", "-H", "X-Trace: 42", "--json"], app: app)
            try #require(raw.status == 0, "\(raw.err)")
            let fromFile = try JSONDecoder().decode(EchoResponse.self, from: Data(raw.out.utf8))
            #expect(fromFile.form == ["a": ["1"], "b": ["two"]])
            #expect(fromFile.headers["X-Trace"] == "42")
        }
    }

    @Test("echo -X GET -d and -X HEAD are usage errors in words, with nothing else printed")
    func echoWithoutBody() async {
        let get = await jotter(["echo", "-X", "GET", "-d", "a=1"], app: nil)
        #expect(get.status == ExitCode.usage)
        #expect(get.err == "error: a GET request carries no body: send the fields with -q key=value, or use -X POST\nSee 'jotter echo --help'.\n")
        let head = await jotter(["echo", "-X", "HEAD"], app: nil)
        #expect(head.status == ExitCode.usage)
        #expect(head.err.hasPrefix("error: /echo answers HEAD with headers only"))
    }

    @Test("a server that is not Jotter is named as such, not as a missing note")
    func notJotter() async throws {
        let other = try PlainServer(
            answer: "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 9\r\nConnection: close\r\n\r\nNot Found")
        defer { other.stop() }
        let result = await commands.jotter(["notes", "show", "1", "--server", "127.0.0.1:\(other.port)"], app: nil)
        #expect(result.status == ExitCode.unreachable)
        #expect(
            result.err
                == "error: the server answered 404 Not Found without Jotter's error details: is it a Jotter server? (--server URL or JOTTER_SERVER)\n"
        )
    }

    @Test("a server that closes in the middle of an upload is a failure in words, never a SIGPIPE")
    func closedMidUpload() throws {
        let server = try PlainServer { client in
            var buffer = [UInt8](repeating: 0, count: 65536)
            _ = recv(client, &buffer, buffer.count, 0)
            _ = "HTTP/1.1 100 Continue\r\n\r\n".withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            _ = recv(client, &buffer, buffer.count, 0)
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)  // close with a reset
            setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
        defer { server.stop() }
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let big = folder.appendingPathComponent("big.bin")
        _ = FileManager.default.createFile(atPath: big.path, contents: nil)
        #expect(truncate(big.path, 256 << 20) == 0)
        let result = try BinaryTests.jotter(["upload", big.path, "--server", "127.0.0.1:\(server.port)"], environment: [:])
        #expect(result.status == ExitCode.unreachable, "\(result)")
        #expect(result.err.hasPrefix("error: the connection to 127.0.0.1:\(server.port) was lost"), "\(result.err)")
    }

    @Test("notes watch says on standard error when it reconnects")
    func reconnecting() async throws {
        let app = try TestApp()
        let captured = Captured()
        let watching = Task {
            await JotterCommandLine.run(
                ["notes", "watch", "--since", "0"], environment: ["JOTTER_SERVER": "127.0.0.1:\(app.port)"],
                console: captured.console)
        }
        _ = try await JotterClient(baseURL: app.baseURL).notes.create("seen")
        for _ in 0..<1500 where captured.out.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(10)) }
        let shown = captured.out.withLock { $0 }
        try #require(!shown.isEmpty, "the watch never showed the note")
        app.stop()
        for _ in 0..<1500 where captured.err.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(10)) }
        watching.cancel()
        #expect(await watching.value == ExitCode.success)
        let err = captured.err.withLock { $0 }
        #expect(err == "reconnecting in 3.0 s (the server ended the event stream)…\n", "\(err)")
    }

    @Test("notes watch that has seen no event yet misses no change made while it reconnects, across a server restart")
    func watchResumesFromTheFirstCursor() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-watch-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try ServerProcess(["--quiet"], dataDirectory: folder)
        let port = first.port
        _ = try await JotterClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!).notes.create("before the watch")
        let captured = Captured()
        let watching = Task {
            await JotterCommandLine.run(
                ["notes", "watch", "--json"], environment: ["JOTTER_SERVER": "127.0.0.1:\(port)"],
                console: captured.console)
        }
        // Connected: the server counts the stream (its first message, the cursor, is sent at once).
        var open = false
        for _ in 0..<500 where !open {
            open = try RawHTTP(port: port).request("GET", "/metrics", close: true).text.contains("\njotter_event_streams 1\n")
            if !open { try await Task.sleep(for: .milliseconds(10)) }
        }
        try #require(open, "the watch never connected")
        first.signal(SIGTERM)
        _ = first.finish()
        // While the watch waits to reconnect, a change lands through another server on the folder.
        let meanwhile = try ServerProcess(["--quiet"], dataDirectory: folder)
        _ = try await JotterClient(baseURL: URL(string: "http://127.0.0.1:\(meanwhile.port)")!).notes.create("made while it reconnected")
        meanwhile.signal(SIGTERM)
        _ = meanwhile.finish()
        let third = try ServerProcess(["--quiet", "--port", "\(port)"], dataDirectory: folder)
        defer { third.signal(SIGTERM); _ = third.finish() }
        for _ in 0..<1500 where !captured.out.withLock({ $0.contains("made while it reconnected") }) {
            try await Task.sleep(for: .milliseconds(10))
        }
        watching.cancel()
        #expect(await watching.value == ExitCode.success)
        let out = captured.out.withLock { $0 }
        #expect(out.contains("\"event\":\"note.created\"") && out.contains("made while it reconnected"), "\(out) / \(captured.err.withLock { $0 })")
        #expect(!out.contains("before the watch"), "only what happened after the watch started: \(out)")
        #expect(!out.contains("\"reload\""), "\(out)")
    }
}

/// A server that answers every connection with the same bytes (something that is not Jotter),
/// or as `handle` does.
final class PlainServer: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    private let thread: Thread

    convenience init(answer: String) throws {
        try self.init { client in
            var buffer = [UInt8](repeating: 0, count: 65536)
            _ = recv(client, &buffer, buffer.count, 0)
            _ = answer.withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        }
    }

    init(handle: @escaping @Sendable (Int32) -> Void) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw RawHTTP.Failure(message: "cannot listen") }
        port = Int(UInt16(bigEndian: address.sin_port))
        let listener = fd
        thread = Thread {
            while true {
                let client = accept(listener, nil, nil)
                // The listener is closed here, by the one thread that uses it: closed in stop(),
                // its number could be another test's socket by the time this loop calls accept.
                if client < 0 { if errno == EINTR { continue }; close(listener); return }
                handle(client)
                close(client)
            }
        }
        thread.start()
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))  // accept fails, and the thread closes the listener
    }
}
