//===- Bootstrap.h - MPI worlds started by environment variables -*- C++
//-*-===//
//
// mpirun (or srun with PMIx) starts the ranks of a job as one MPI world.
// torchrun, a Slurm step without PMI support, or a person with a shell
// start N independent processes instead and tell each its place through
// environment variables: RANK/WORLD_SIZE and MASTER_ADDR/MASTER_PORT
// (torchrun), or SLURM_PROCID/SLURM_NTASKS. Each such process is an MPI
// singleton, and singletons cannot talk to each other until they share a
// rendezvous server. The bootstrap builds the world from them:
//
//  1. before MPI_Init, a TCP rendezvous at MASTER_ADDR:MASTER_PORT: rank 0
//     starts Open MPI's ompi-server (the rendezvous server MPI's
//     connect/accept needs across separately started processes), listens,
//     and sends its address to every other rank; each rank points Open MPI
//     at it (OMPI_MCA_pmix_server_uri);
//  2. after MPI_Init, rank 0 opens an MPI port and the ranks join one at a
//     time, in rank order (MPI_Comm_accept/MPI_Comm_connect, then
//     MPI_Intercomm_merge), so the merged communicator's ranks are RANK.
//
// The result is an ordinary intracommunicator that replaces MPI_COMM_WORLD
// everywhere (mpi::World::comm), so the CPU backend's MPI communicators and
// the CUDA backend's NCCL bootstrap work unchanged. Every wait is bounded
// (TESSERA_RENDEZVOUS_TIMEOUT seconds, default 300): a rank that never
// comes is an error naming the ranks that are missing, not a hang. The
// rendezvous connections stay open while the job runs, as the job's
// lifeline: a rank that ends without finishing ends every other rank, as
// mpirun would (a thread watches them; see watchPeers).
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_MPI_BOOTSTRAP_H
#define TESSERA_RUNTIME_MPI_BOOTSTRAP_H

#include "Mpi.h"

#include <memory>
#include <optional>
#include <string>

namespace tessera {
namespace rt {
namespace mpi {

/// A job whose ranks were started by environment variables.
struct EnvironmentLaunch {
  int rank = 0, size = 1;
  std::string source;     ///< "RANK/WORLD_SIZE" or "SLURM_PROCID/SLURM_NTASKS"
  std::string masterAddr; ///< MASTER_ADDR (default 127.0.0.1)
  int masterPort = 29500; ///< MASTER_PORT (default 29500, torchrun's)
  double timeoutSeconds = 300;
};

/// The environment launch this process is part of: none when an MPI launcher
/// started it (mpirun, or srun with PMI: OMPI_COMM_WORLD_SIZE, PMIX_RANK or
/// PMI_RANK is set), when neither RANK/WORLD_SIZE nor SLURM_PROCID/
/// SLURM_NTASKS in an srun step (SLURM_STEP_ID) is set, or when the world
/// has one rank. Throws
/// Error for inconsistent variables (a rank outside the world, a size or
/// port that is not a number).
std::optional<EnvironmentLaunch> environmentLaunch();

/// The bootstrap of one process; see the file comment.
class Bootstrap {
public:
  explicit Bootstrap(EnvironmentLaunch launch);
  ~Bootstrap();
  Bootstrap(const Bootstrap &) = delete;
  Bootstrap &operator=(const Bootstrap &) = delete;

  /// Step 1, before MPI_Init: the TCP rendezvous; sets
  /// OMPI_MCA_pmix_server_uri in this process's environment.
  void beforeInit();
  /// Step 2, after MPI_Init: the world communicator, whose rank of this
  /// process is launch.rank. Starts watching the other ranks.
  MPI_Comm joinWorld();
  /// Before MPI_Finalize: stops watching, tells the peers this rank
  /// finishes, and closes the connections.
  void beforeFinalize();
  /// After MPI_Finalize: ends rank 0's ompi-server.
  void afterFinalize();

private:
  void startMonitor();

  struct State;
  EnvironmentLaunch launch;
  std::unique_ptr<State> state;
};

} // namespace mpi
} // namespace rt
} // namespace tessera

#endif // TESSERA_RUNTIME_MPI_BOOTSTRAP_H
