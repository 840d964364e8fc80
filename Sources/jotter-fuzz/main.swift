// libFuzzer targets for Jotter's parsers, one executable: `JOTTER_FUZZ` names the parser.
//
//   scripts/fuzz               (or `make fuzz`): each target for 60 s on its corpus, fuzz/corpus/<name>
//   JOTTER_FUZZ=range .build/debug/jotter-fuzz fuzz/corpus/range
//
// Built with `-sanitize=fuzzer,address` and `-DFUZZING`, it hands over to libFuzzer's driver; built plainly (as `swift build` does), it replays the files it is given
// through the same target, so a crash found once stays a regression check.
// Debug builds only: the parsers are internal, reached with `@testable import`, which a release
// build (`make test` builds one) does not allow.
#if DEBUG
import Foundation
@testable import JotterClient
@testable import JotterHTTP

/// One input to one parser. A parser may refuse an input (throw); it must never crash.
func fuzzOne(_ target: String, _ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    switch target {
    case "multipart":
        // The first byte picks the chunking, so boundaries fall anywhere.
        let step = max(1, Int(bytes.first ?? 1))
        var parser = MultipartParser(boundary: "XyZ")
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + step)
            var failed = false
            bytes[start..<end].withUnsafeBytes { chunk in
                do throws(HTTPError) { try parser.feed(chunk) { _ in } } catch { failed = true }
            }
            if failed { return }
            start = end
        }
        try? parser.finish()
        _ = try? MultipartParser.boundary(of: text)
        _ = try? MultipartParser.parseHeaders(bytes[...])
        _ = cleanFilename(text)
    case "form":
        _ = try? FormFields(decoding: bytes, context: "the body")
    case "framing":
        // Request head as text: "METHOD TARGET VERSION\nName: value\n…"
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let line = (lines.first ?? "").split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        var headers = HTTPHeaders()
        for field in lines.dropFirst() {
            let pair = field.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            headers.add(String(pair[0]), pair.count > 1 ? String(pair[1]) : "")
        }
        _ = FramingCheck.check(method: line.first ?? "", target: line.count > 1 ? line[1] : "", version: line.count > 2 ? line[2] : "",
                               headers: headers, folded: bytes.count % 7 == 0)
        _ = FramingCheck.isValidHost(text)
    case "range":
        let size = UInt64(bytes.first ?? 0) * 1_000
        _ = ByteRange(text, size: size)
        _ = ByteRange(text, size: .max)
        _ = ByteRange(text, size: 0)
    case "etag":
        let condition = EntityTagCondition(text)
        _ = condition.matches(#""3""#, weak: true)
        _ = condition.matches(text, weak: false)
    case "event-stream":
        var parser = EventStreamParser()
        let step = max(1, Int(bytes.last ?? 1))
        var start = 0
        while start < bytes.count {
            _ = parser.feed(bytes[start..<min(bytes.count, start + step)])
            start += step
        }
    default:
        fatalError("JOTTER_FUZZ must be one of: multipart, form, framing, range, etag, event-stream")
    }
}

let fuzzTarget = ProcessInfo.processInfo.environment["JOTTER_FUZZ"] ?? ""

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(fuzzTarget, data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt
#endif

// The entry point.
#if FUZZING
var arguments = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argv) { fuzzInput($0, $1) })
#else
// Replay: every file named (or every file in every folder named) through the target.
var replayed = 0
for argument in CommandLine.arguments.dropFirst() {
    var isFolder: ObjCBool = false
    guard FileManager.default.fileExists(atPath: argument, isDirectory: &isFolder) else { continue }
    let files = isFolder.boolValue
        ? ((try? FileManager.default.contentsOfDirectory(atPath: argument)) ?? []).sorted().map { argument + "/" + $0 } : [argument]
    for file in files {
        guard let data = FileManager.default.contents(atPath: file) else { continue }
        fuzzOne(fuzzTarget, Array(data))
        replayed += 1
    }
}
print("jotter-fuzz: \(fuzzTarget): \(replayed) input(s) replayed without a crash")
#endif
#else
print("jotter-fuzz: build it in debug (scripts/fuzz does)")
#endif
