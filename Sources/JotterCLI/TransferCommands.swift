import JotterCLICore
import Foundation
import JotterAPI
import JotterClient

/// `jotter upload PATH… [--note ID]`: stores files on the server, streamed from disk.
struct UploadCommand: AsyncCommand {
    static let name = "upload"
    static let summary = "Upload files, optionally attached to a note."
    static let help = """
    USAGE: jotter upload PATH… [--note ID] [options]

    Uploads each file in turn, streamed from disk. On a terminal a progress bar shows the
    rate and the time left; then one line per file: its upload id, size and rate.

    OPTIONS:
      --note ID                     Attach the files to this note.
    \(ClientOptions.help)

    """

    let options: ClientOptions
    let note: String?
    let paths: [String]

    init(parsing arguments: inout Arguments) throws {
        options = try ClientOptions(parsing: &arguments)
        note = try arguments.option("note")
        paths = try arguments.positionals()
        guard !paths.isEmpty else { throw UsageError("missing PATH") }
    }

    func run(console: Console) async throws -> Int32 {
        let client = options.client()
        var uploads: [Upload] = []
        for path in paths {
            let url = URL(fileURLWithPath: path)
            let bar = ProgressBar(label: url.lastPathComponent, console: console)
            let upload: Upload
            do {
                upload = try await client.uploads.upload(fileAt: url, noteID: note) { bar.update(completed: $0.completed, total: $0.total) }
            } catch {
                bar.finish()
                throw error
            }
            bar.finish()
            uploads.append(upload)
            if !options.json {
                console.out("uploaded \(path) as \(upload.id)  \(TextFormat.bytes(upload.size))  "
                            + "in \(TextFormat.oneDecimal(bar.elapsed)) s (\(TextFormat.rate(Double(upload.size) / max(bar.elapsed, 0.001))))\n")
            }
        }
        if options.json { console.out(try ClientOptions.json(UploadList(uploads: uploads))) }
        return ExitCode.success
    }
}

/// `jotter download ID [-o PATH]`: fetches an upload, resuming a partial file.
struct DownloadCommand: AsyncCommand {
    static let name = "download"
    static let summary = "Download an upload (resumes a partial file)."
    static let help = """
    USAGE: jotter download ID [-o PATH] [options]

    Saves the upload's content to PATH (default: its file name, in this folder). A partial
    file already there is resumed: only the rest is fetched.

    OPTIONS:
      -o, --output PATH             Where to save it.
    \(ClientOptions.help)

    """

    let options: ClientOptions
    let id: String
    let output: String?

    init(parsing arguments: inout Arguments) throws {
        options = try ClientOptions(parsing: &arguments)
        output = try arguments.values(["-o", "--output"]).last
        id = try arguments.single("ID")
    }

    func run(console: Console) async throws -> Int32 {
        let client = options.client()
        let upload = try await client.uploads.get(id)
        let path = output ?? Self.safeName(upload.filename)
        let bar = ProgressBar(label: path, console: console)
        let start = DownloadResult(url: URL(fileURLWithPath: path), size: 0, resumedFrom: Int64((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0))
        let result: DownloadResult
        do {
            result = try await client.uploads.download(id, to: start.url) { bar.update(completed: $0.completed, total: $0.total, startedAt: start.resumedFrom) }
        } catch {
            bar.finish()
            throw error
        }
        bar.finish()
        if options.json {
            console.out(try ClientOptions.json(["path": path, "size": String(result.size), "resumed_from": String(result.resumedFrom)]))
        } else {
            let resumed = result.resumedFrom > 0 ? " (resumed after \(TextFormat.bytes(result.resumedFrom)))" : ""
            console.out("downloaded \(upload.id) to \(path)  \(TextFormat.bytes(result.size))\(resumed)\n")
        }
        return ExitCode.success
    }

    /// The server's file name, usable as a file in this folder.
    static func safeName(_ filename: String) -> String {
        let last = filename.split(separator: "/").last.map(String.init) ?? ""
        return last.isEmpty || last == "." || last == ".." ? "download" : last
    }
}
