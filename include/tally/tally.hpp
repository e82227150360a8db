// tally: GPU and CPU histograms with numpy's exact semantics. Include this header.
#pragma once

#include "tally/axis.hpp"
#include "tally/bincount.hpp"
#include "tally/device.hpp"
#include "tally/dtype.hpp"
#include "tally/edges.hpp"
#include "tally/error.hpp"
#include "tally/histogram.hpp"
#include "tally/plan.hpp"
#include "tally/serialize.hpp"
#include "tally/strategy.hpp"
