// hnswlib_bench: the C++ side of BenchmarkHnswlib (hnswlib_bench_test.go).
// It builds an hnswlib index (inner product on unit vectors = cosine) over
// float32 points, on all hardware threads, then times single queries one
// at a time on one thread, as the Go benchmark does.
//
// usage: hnswlib_bench points.f32 queries.f32 dim M efc passes ids.out ef...
// prints "build-s <s>" (or "load-s <s>"), "rss-mib <MiB>", then
// "ef <ef> <p50-ms> <p95-ms> <p99-ms>" per ef; writes "<ef> <query> <id>x10"
// lines to ids.out.
//
// With HNSWLIB_BENCH_INDEX=<file> in the environment the index is loaded
// from that file when it exists (points.f32 is then not read) and saved
// there after a build otherwise (the scale suite caches its index so).
#include "hnswlib/hnswlib.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

static std::vector<float> readFloats(const char* path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f) { std::fprintf(stderr, "open %s failed\n", path); std::exit(1); }
    size_t size = f.tellg();
    f.seekg(0);
    std::vector<float> v(size / 4);
    f.read(reinterpret_cast<char*>(v.data()), size);
    return v;
}

static double rssMiB() {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024;
    }
    return 0;
}

static hnswlib::HierarchicalNSW<float>* build(hnswlib::InnerProductSpace& space, const char* points, int dim, int M, int efc);
static void run(hnswlib::HierarchicalNSW<float>* index, const std::vector<float>& qs, size_t nq, int dim, int passes,
                const char* idsPath, char** efs, int nefs);

int main(int argc, char** argv) {
    if (argc < 9) {
        std::fprintf(stderr, "usage: %s points.f32 queries.f32 dim M efc passes ids.out ef...\n", argv[0]);
        return 2;
    }
    int dim = std::atoi(argv[3]), M = std::atoi(argv[4]), efc = std::atoi(argv[5]), passes = std::atoi(argv[6]);
    std::vector<float> qs = readFloats(argv[2]);
    size_t nq = qs.size() / dim;
    hnswlib::InnerProductSpace space(dim);
    const char* cache = std::getenv("HNSWLIB_BENCH_INDEX");
    hnswlib::HierarchicalNSW<float>* index;
    if (cache != nullptr && *cache != 0 && std::ifstream(cache).good()) {
        auto t0 = std::chrono::steady_clock::now();
        index = new hnswlib::HierarchicalNSW<float>(&space, std::string(cache));
        double load = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("load-s %.3f\nrss-mib %.1f\n", load, rssMiB());
    } else {
        index = build(space, argv[1], dim, M, efc);
        if (cache != nullptr && *cache != 0) {
            std::string tmp = std::string(cache) + ".tmp";
            index->saveIndex(tmp);
            if (std::rename(tmp.c_str(), cache) != 0) { std::fprintf(stderr, "rename %s failed\n", tmp.c_str()); return 1; }
        }
    }
    std::fflush(stdout);
    run(index, qs, nq, dim, passes, argv[7], argv + 8, argc - 8);
    return 0;
}

static hnswlib::HierarchicalNSW<float>* build(hnswlib::InnerProductSpace& space, const char* points, int dim, int M, int efc) {
    std::vector<float> pts = readFloats(points);
    size_t n = pts.size() / dim;
    auto* index = new hnswlib::HierarchicalNSW<float>(&space, n, M, efc, 100);
    auto t0 = std::chrono::steady_clock::now();
    index->addPoint(pts.data(), 0);
    std::atomic<size_t> next(1);
    std::vector<std::thread> threads;
    unsigned nt = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned t = 0; t < nt; t++) {
        threads.emplace_back([&] {
            for (size_t i; (i = next.fetch_add(1)) < n;) index->addPoint(pts.data() + i * dim, i);
        });
    }
    for (auto& th : threads) th.join();
    double build = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<float>().swap(pts);
    std::printf("build-s %.3f\nrss-mib %.1f\n", build, rssMiB());
    return index;
}

static void run(hnswlib::HierarchicalNSW<float>* index, const std::vector<float>& qs, size_t nq, int dim, int passes,
                const char* idsPath, char** efs, int nefs) {
    std::FILE* out = std::fopen(idsPath, "w");
    if (out == nullptr) { std::fprintf(stderr, "open %s failed\n", idsPath); std::exit(1); }
    for (int a = 0; a < nefs; a++) {
        int ef = std::atoi(efs[a]);
        index->setEf(ef);
        for (size_t j = 0; j < std::min<size_t>(nq, 100); j++) index->searchKnn(qs.data() + j * dim, 10);
        std::vector<double> lat;
        for (int p = 0; p < passes; p++) {
            for (size_t j = 0; j < nq; j++) {
                auto s = std::chrono::steady_clock::now();
                auto res = index->searchKnn(qs.data() + j * dim, 10);
                lat.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
                if (p == 0) {
                    std::vector<size_t> ids;
                    while (!res.empty()) { ids.push_back(res.top().second); res.pop(); }
                    std::fprintf(out, "%d %zu", ef, j);
                    for (auto it = ids.rbegin(); it != ids.rend(); ++it) std::fprintf(out, " %zu", *it);
                    std::fprintf(out, "\n");
                }
            }
        }
        std::sort(lat.begin(), lat.end());
        auto pct = [&](double q) { return lat[size_t(q * (lat.size() - 1))]; };
        std::printf("ef %d %.4f %.4f %.4f\n", ef, pct(0.5), pct(0.95), pct(0.99));
        std::fflush(stdout);
    }
    std::fclose(out);
}
