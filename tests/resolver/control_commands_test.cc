// The control-command table (resolver/ops/control_commands.h) and Control::execute() cannot
// drift apart: every command of the table is dispatched, every command the sources dispatch is
// in the table, anything else is refused as unknown, and `help` lists the table.
#include "resolver/ops/control_commands.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "resolver/ops/control.h"

namespace hg::resolver {
namespace {

const MonoTime kNow{Millis{50'000'000}};

bool in_table(std::string_view name) {
  return find_control_command(name) != nullptr;
}

TEST(ControlCommands, EveryCommandOfTheTableIsDispatched) {
  Shared shared{Config{}};
  for (const ControlCommand& c : kControlCommands) {
    const std::string reply = Control::execute_all(shared, c.name, kNow);
    EXPECT_EQ(reply.find("unknown command"), std::string::npos) << c.name << ": " << reply;
    EXPECT_EQ(reply.find("not dispatched"), std::string::npos) << c.name << ": " << reply;
  }
}

TEST(ControlCommands, NamesOutsideTheTableAreUnknown) {
  Shared shared{Config{}};
  // hourglass-ctl's own commands, near misses of real ones, and a real one in capitals.
  for (const char* name :
       {"top", "use-as-system-resolver", "flush-all", "STATS", "ttl-cap-", "shadows", "link0"}) {
    ASSERT_FALSE(in_table(name)) << name;
    EXPECT_EQ(Control::execute_all(shared, name, kNow),
              fmt::format("error: unknown command '{}'; try 'help'\n", name));
  }
}

// Every command name the daemon's sources compare a request's first word with.
std::set<std::string> dispatched_in(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  std::set<std::string> names;
  static const std::regex compare(
      R"((?:\bcmd|words\[0\]) == (?:std::string_view\()?"([a-z0-9-]+)\")");
  for (std::sregex_iterator it(s.begin(), s.end(), compare), end; it != end; ++it)
    names.insert((*it)[1].str());
  return names;
}

TEST(ControlCommands, EveryDispatchedCommandIsInTheTable) {
  std::set<std::string> all;
  for (const char* file : {"resolver/ops/control.cc", "resolver/ops/shadow_control.cc"}) {
    const auto names = dispatched_in(std::string(HG_SOURCE_DIR) + "/" + file);
    EXPECT_FALSE(names.empty()) << file << ": no dispatched commands found (moved?)";
    all.insert(names.begin(), names.end());
  }
  for (const std::string& name : all)
    EXPECT_TRUE(in_table(name)) << name << " is dispatched but not in kControlCommands";
  for (const ControlCommand& c : kControlCommands)
    EXPECT_TRUE(all.count(std::string(c.name))) << c.name << " is in the table, not dispatched";
}

TEST(ControlCommands, HelpListsEveryCommandWithItsArgumentsAndHelp) {
  Shared shared{Config{}};
  const std::string help = Control::execute_all(shared, "help", kNow);
  for (const ControlCommand& c : kControlCommands) {
    std::string head(c.name);
    if (!c.args.empty()) (head += ' ') += c.args;
    // At the start of a line: the first command opens the reply.
    EXPECT_TRUE(help.starts_with(head) || help.find("\n" + head) != std::string::npos) << head;
    EXPECT_NE(help.find(c.help), std::string::npos) << c.help;
  }
  EXPECT_NE(help.find("(flush, flush-zone, ttl-cap and ttl-cap-clear take --fleet"),
            std::string::npos)
      << help;
  // Reply lines are never empty: the empty line ends a reply on the socket.
  EXPECT_EQ(help.find("\n\n"), std::string::npos);
}

TEST(ControlCommands, FleetGoesOnlyWithTheCommandsMarkedForIt) {
  Shared shared{Config{}};
  EXPECT_EQ(Control::execute_all(shared, "links --fleet", kNow),
            "error: --fleet goes only with flush, flush-zone, ttl-cap and ttl-cap-clear\n");
  EXPECT_EQ(Control::execute_all(shared, "ttl-caps --fleet", kNow),
            "error: --fleet goes only with flush, flush-zone, ttl-cap and ttl-cap-clear\n");
}

}  // namespace
}  // namespace hg::resolver
