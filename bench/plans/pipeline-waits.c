/* pipeline-waits.c: a synthetic 1F1B pipeline, to measure what a stage's
 * waits for its neighbours cost when ranks share cores.
 *
 *   mpicc -O1 bench/plans/pipeline-waits.c -o /tmp/pipeline-waits
 *   OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
 *     mpirun --oversubscribe --bind-to none -np 4 /tmp/pipeline-waits 4 150e-6 300e-6
 *
 * Arguments: micro-batches, a forward block's and a backward block's
 * seconds. Each rank is a stage; a block spins for its seconds of wall
 * clock (so a preempted block still ends on time: what the step loses
 * beyond the ideal 1F1B makespan, (m + pp - 1) x (F + B), is waiting), then
 * sends 4 KiB to the next (forward) or previous (backward) stage, as the
 * emitted programs do (MPI_Isend, blocking receives that poll and yield
 * under the run script's settings, given here by hand). Prints the median
 * step over 50 steps (after 10). bench/plans/results.md has what it
 * measured on a 2-core VM.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

static void spin(double seconds) {
  double start = MPI_Wtime(), x = 0;
  while (MPI_Wtime() - start < seconds)
    for (int i = 0; i < 200; ++i)
      x += i * 1e-9;
  sink = x;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 4) {
    if (rank == 0)
      fprintf(stderr, "usage: pipeline-waits MICRO_BATCHES F_SECONDS B_SECONDS\n");
    MPI_Finalize();
    return 1;
  }
  int m = atoi(argv[1]);
  double f = atof(argv[2]), b = atof(argv[3]);
  if (m < 1 || m > 64 || f < 0 || b < 0) {
    if (rank == 0)
      fprintf(stderr, "error: 1 <= micro-batches <= 64, seconds >= 0\n");
    MPI_Finalize();
    return 1;
  }
  enum { kSteps = 60, kWarm = 10, kFloats = 1024 };
  static float out[kFloats], in[kFloats];
  double steps[kSteps];
  for (int step = 0; step < kSteps; ++step) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    MPI_Request sends[128];
    int sent = 0, fwd = 0, bwd = 0;
    int warm = size - rank - 1 < m ? size - rank - 1 : m;
    for (int i = 0; i < warm + m + m; ++i) {
      /* The warm-up forwards, then one forward and one backward in turn,
       * then the remaining backwards. */
      int forward = fwd < warm || (fwd < m && fwd - warm <= bwd);
      if (forward) {
        if (rank > 0)
          MPI_Recv(in, kFloats, MPI_FLOAT, rank - 1, fwd, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
        spin(f);
        if (rank + 1 < size)
          MPI_Isend(out, kFloats, MPI_FLOAT, rank + 1, fwd, MPI_COMM_WORLD,
                    &sends[sent++]);
        ++fwd;
      } else {
        if (rank + 1 < size)
          MPI_Recv(in, kFloats, MPI_FLOAT, rank + 1, 64 + bwd, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
        spin(b);
        if (rank > 0)
          MPI_Isend(out, kFloats, MPI_FLOAT, rank - 1, 64 + bwd,
                    MPI_COMM_WORLD, &sends[sent++]);
        ++bwd;
      }
      if (fwd == m && bwd == m)
        break;
    }
    MPI_Waitall(sent, sends, MPI_STATUSES_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    steps[step] = MPI_Wtime() - start;
  }
  if (rank == 0) {
    qsort(steps + kWarm, kSteps - kWarm, sizeof(double), compare);
    printf("%d stages, %d micro-batches, F %.0f us, B %.0f us: median step "
           "%.3f ms (1F1B without waits: %.3f ms)\n",
           size, m, f * 1e6, b * 1e6, steps[kWarm + (kSteps - kWarm) / 2] * 1e3,
           (m + size - 1) * (f + b) * 1e3);
  }
  MPI_Finalize();
  return 0;
}
