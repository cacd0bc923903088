// Native NCCL all_reduce sweep, one process driving every visible GPU (like all_reduce_perf -g N):
// the baseline our PyTorch sweep is compared with.  Timing as nccl-tests describes its own: warm-up, then a
// host steady_clock around `iters` back-to-back group-launched all_reduces, stream sync, divide by iters.
// Each iteration uses the next slice of a max-size buffer.  Optional: capture the iters in a CUDA graph.
// Usage: ncclref MINBYTES MAXBYTES FACTOR ITERS WARMUP GRAPH(0|1)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include <nccl.h>

#define CK(x) do { cudaError_t ck_ = (x); if (ck_ != cudaSuccess) { \
  fprintf(stderr, "cuda %s at %d\n", cudaGetErrorString(ck_), __LINE__); exit(1); } } while (0)
#define NK(x) do { ncclResult_t nk_ = (x); if (nk_ != ncclSuccess) { \
  fprintf(stderr, "nccl %s at %d\n", ncclGetErrorString(nk_), __LINE__); exit(1); } } while (0)

int main(int argc, char** argv) {
  if (argc != 7) { fprintf(stderr, "usage: ncclref MIN MAX FACTOR ITERS WARMUP GRAPH\n"); return 2; }
  size_t lo = strtoull(argv[1], 0, 10), hi = strtoull(argv[2], 0, 10);
  int factor = atoi(argv[3]), iters = atoi(argv[4]), warm = atoi(argv[5]), graph = atoi(argv[6]);
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  std::vector<ncclComm_t> comms(n);
  std::vector<int> devs(n);
  for (int i = 0; i < n; i++) devs[i] = i;
  NK(ncclCommInitAll(comms.data(), n, devs.data()));
  std::vector<cudaStream_t> streams(n);
  std::vector<float*> sendb(n), recvb(n);
  for (int i = 0; i < n; i++) {
    CK(cudaSetDevice(i));
    CK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
    CK(cudaMalloc(&sendb[i], hi));
    CK(cudaMalloc(&recvb[i], hi));
    CK(cudaMemset(sendb[i], 0, hi));
    CK(cudaMemset(recvb[i], 0, hi));
  }
  int ver = 0;
  NK(ncclGetVersion(&ver));
  printf("# ncclref ranks %d nccl %d iters %d warmup %d graph %d\n", n, ver, iters, warm, graph);
  printf("# %12s %12s %10s %10s %10s %10s %10s %10s\n", "size(B)", "count", "oop_us", "oop_alg", "oop_bus",
         "ip_us", "ip_alg", "ip_bus");
  auto launch = [&](size_t bytes, int it, int inplace) {
    size_t steps = hi / bytes ? hi / bytes : 1, shift = bytes * (it % steps);
    NK(ncclGroupStart());
    for (int i = 0; i < n; i++) {
      char* r = (char*)recvb[i] + shift;
      char* s = inplace ? r : (char*)sendb[i] + shift;
      NK(ncclAllReduce(s, r, bytes / 4, ncclFloat, ncclSum, comms[i], streams[i]));
    }
    NK(ncclGroupEnd());
  };
  auto sync = [&]() { for (int i = 0; i < n; i++) { CK(cudaSetDevice(i)); CK(cudaStreamSynchronize(streams[i])); } };
  for (size_t bytes = lo; bytes <= hi; bytes *= factor) {
    size_t b = bytes / 4 * 4;
    if (!b) continue;
    double us[2];
    for (int inplace = 0; inplace < 2; inplace++) {
      for (int w = 0; w < warm; w++) launch(b, w, inplace);
      sync();
      std::vector<cudaGraphExec_t> execs(n);
      if (graph) {
        for (int i = 0; i < n; i++) CK(cudaStreamBeginCapture(streams[i], cudaStreamCaptureModeThreadLocal));
        for (int it = 0; it < iters; it++) launch(b, it, inplace);
        std::vector<cudaGraph_t> gs(n);  // end every capture before instantiating (no unsafe calls mid-capture)
        for (int i = 0; i < n; i++) CK(cudaStreamEndCapture(streams[i], &gs[i]));
        for (int i = 0; i < n; i++) {
          CK(cudaSetDevice(i));
          CK(cudaGraphInstantiate(&execs[i], gs[i], 0));
          CK(cudaGraphDestroy(gs[i]));
        }
        for (int i = 0; i < n; i++) CK(cudaGraphLaunch(execs[i], streams[i]));
        sync();
      }
      auto t0 = std::chrono::steady_clock::now();
      if (graph) {
        for (int i = 0; i < n; i++) CK(cudaGraphLaunch(execs[i], streams[i]));
      } else {
        for (int it = 0; it < iters; it++) launch(b, it, inplace);
      }
      sync();
      us[inplace] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
      if (graph) for (int i = 0; i < n; i++) CK(cudaGraphExecDestroy(execs[i]));
    }
    double f = 2.0 * (n - 1) / n;
    printf("  %12zu %12zu %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f\n", b, b / 4, us[0], b / us[0] / 1e3,
           b / us[0] / 1e3 * f, us[1], b / us[1] / 1e3, b / us[1] / 1e3 * f);
  }
  for (int i = 0; i < n; i++) NK(ncclCommDestroy(comms[i]));
  return 0;
}
