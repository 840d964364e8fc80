import Foundation
import Testing
import JotterAPI
import JotterClient
@testable import JotterCLI
@testable import JotterCLICore
import JotterTestSupport

/// `jotter echo`, `upload`, `download`, and how they show progress.
@Suite("jotter echo, upload, download")
struct TransferCommandTests {
    let commands = ClientCommandTests()

    @Test("echo: -q, -d, -F with a file, --json body, -X")
    func echo() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("hi.txt")
        try Data("hi\n".utf8).write(to: file)
        try await withApp { app in
            let form = await commands.jotter(["echo", "-q", "q=a&b", "-d", "name=Bob & Alice", "-d", "x=1+1=2"], app: app)
            try #require(form.status == 0, "\(form.err)")
            let echoed = try JSONDecoder().decode(EchoResponse.self, from: Data(form.out.utf8))
            #expect(echoed.method == "POST")
            #expect(echoed.args == ["q": ["a&b"]])
            #expect(echoed.form == ["name": ["Bob & Alice"], "x": ["1+1=2"]])

            let multipart = await commands.jotter(["echo", "-X", "PUT", "-F", "note=hello", "-F", "file=@\(file.path)"], app: app)
            try #require(multipart.status == 0, "\(multipart.err)")
            let parts = try JSONDecoder().decode(EchoResponse.self, from: Data(multipart.out.utf8))
            #expect(parts.method == "PUT")
            #expect(parts.form == ["note": ["hello"]])
            #expect(parts.files["file"]?.first?.size == 3)
            #expect(parts.files["file"]?.first?.filename == "hi.txt")

            let json = await commands.jotter(["echo", "--json-body", #"{"a":[1,"b"]}"#, "--json"], app: app)
            try #require(json.status == 0, "\(json.err)")
            #expect(
                try JSONDecoder().decode(EchoResponse.self, from: Data(json.out.utf8)).json == .object(["a": .array([.number(1), .string("b")])]))
        }
    }

    @Test("upload two files to a note, then download one, resuming a partial file")
    func uploadAndDownload() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }
        let first = folder.appendingPathComponent("one.bin"), second = folder.appendingPathComponent("two.txt")
        try Data(bytes).write(to: first)
        try Data("two".utf8).write(to: second)
        try await withApp { app in
            _ = await commands.jotter(["notes", "add", "files"], app: app)
            let uploaded = await commands.jotter(["upload", first.path, second.path, "--note", "1"], app: app)
            #expect(uploaded.status == 0, "\(uploaded.err)")
            let lines = uploaded.out.split(separator: "\n")
            #expect(lines.count == 2)
            #expect(lines[0].hasPrefix("uploaded \(first.path) as ") && lines[0].contains("  293.0 KiB  in "))
            #expect(uploaded.err.isEmpty)  // not a terminal: no progress bar

            let json = await commands.jotter(["upload", second.path, "--json"], app: app)
            let upload = try #require(try JSONDecoder().decode(UploadList.self, from: Data(json.out.utf8)).uploads.first)
            #expect(upload.filename == "two.txt" && upload.noteID == nil)

            let id = try #require(lines[0].split(separator: " ").dropFirst(3).first.map(String.init))
            let target = folder.appendingPathComponent("copy.bin")
            let sha256 = try await JotterClient(baseURL: app.baseURL).uploads.get(id).sha256
            // An interrupted download of this upload, as the SDK leaves it.
            try Data(bytes[..<100_000]).write(to: URL(fileURLWithPath: target.path + ".jotter-part-" + sha256.prefix(16)))
            let downloaded = await commands.jotter(["download", id, "-o", target.path], app: app, terminal: true)
            #expect(downloaded.out == "downloaded \(id) to \(target.path)  293.0 KiB (resumed after 97.7 KiB), SHA-256 checked\n")
            #expect(downloaded.err.contains("100%"))  // the bar, drawn on a terminal, then cleared
            #expect(downloaded.err.hasSuffix("\r\u{1B}[K"))
            #expect(try Data(contentsOf: target) == Data(bytes))
            #expect(await commands.jotter(["download", "nope"], app: app).status == ExitCode.notFound)
        }
    }

    @Test("the progress line: bar, percent, sizes, rate, ETA")
    func progressLine() {
        #expect(
            ProgressBar.line(label: "a.bin", completed: 5 << 20, total: 10 << 20, transferred: 5 << 20, elapsed: 1)
                == "a.bin  [##########··········]  50%  5.0 MiB/10.0 MiB  5.2 MB/s  ETA 0:01")
        #expect(
            ProgressBar.line(label: "b", completed: 0, total: 100, transferred: 0, elapsed: 0)
                == "b  [····················]  0%  0 B/100 B  0.0 MB/s  ETA -:--")
        #expect(ProgressBar.line(label: "c", completed: 2048, total: nil, transferred: 2048, elapsed: 2) == "c  2.0 KiB  0.0 MB/s")
        #expect(TextFormat.bytes(1023) == "1023 B")
        #expect(TextFormat.bytes(3 << 30) == "3.0 GiB")
        #expect(TextFormat.duration(3725) == "1:02:05")
        #expect(TextFormat.excerpt("short", width: 10) == "short")
        #expect(TextFormat.excerpt("a long first line", width: 6) == "a lon…")
        #expect(TextFormat.excerpt("one\ntwo", width: 10) == "one…")
        #expect(TextFormat.table(["ID", "BODY"], [["1", "x"], ["123", "y"]]) == "ID   BODY\n1    x\n123  y\n")
    }
}

/// `jotter upload --resume`: an interrupted resumable upload goes on from the server's offset.
@Suite("jotter upload --resume")
struct ResumeUploadCommandTests {
    let commands = ClientCommandTests()

    @Test("a state file left by an interrupted upload: the rerun sends only the rest and says where it resumed")
    func resume() async throws {
        let folder = try scratchFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }
        let file = folder.appendingPathComponent("big.bin")
        try Data(bytes).write(to: file)
        let environment = ["XDG_STATE_HOME": folder.appendingPathComponent("state").path]
        try await withApp { app in
            // The first run was cut after 100,000 bytes: its upload and state file are there.
            let created = try RawHTTP(port: app.port).request(
                "POST", "/uploads",
                headers: [
                    ("Tus-Resumable", "1.0.0"), ("Upload-Length", "300000"), ("Content-Type", "application/offset+octet-stream"),
                ], body: Array(bytes[..<100_000]), close: true)
            #expect(created.status == 201)
            // RawHTTP's Host has no port: the absolute Location names 127.0.0.1 alone.
            let absolute = try #require(created.header("Location"))
            let path = String(absolute[try #require(absolute.range(of: "/uploads/")).lowerBound...])
            let location = "http://127.0.0.1:\(app.port)" + path
            let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
            let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            let stateFile = try UploadCommand.stateFile(for: file.path, environment: environment)
            try JSONSerialization.data(withJSONObject: ["location": location, "path": file.path, "size": 300_000, "modified": modified])
                .write(to: stateFile)
            let run = await commands.jotter(["upload", "--resume", file.path], app: app, environment: environment)
            #expect(run.status == 0, "\(run.err)")
            #expect(run.out.contains("resumed at 100000 bytes"), "\(run.out)")
            #expect(!FileManager.default.fileExists(atPath: stateFile.path))
            let help = await commands.jotter(["upload", "--help"], app: nil)
            #expect(help.out.contains("--resume"))
        }
    }
}
