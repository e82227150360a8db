// The subcommands; each returns the process exit code and throws usage_error, failure or
// tally::error for main to report.
#pragma once

#include "args.hpp"

namespace tally_cli {

int run_hist(const hist_args& args);
int run_info();
int run_plan(const plan_args& args);
int run_strategies();

}  // namespace tally_cli
