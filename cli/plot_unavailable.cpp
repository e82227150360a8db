// The plot in a build without cairo (cli/CMakeLists.txt did not find it): --plot says so.
#include "errors.hpp"
#include "plot.hpp"

namespace tally_cli {

bool plots_available() { return false; }

frame plot_frame(const plot_model&) { throw failure(kNoPlotsMessage); }

std::string render_plot(const plot_model&, plot_format) { throw failure(kNoPlotsMessage); }

}  // namespace tally_cli
