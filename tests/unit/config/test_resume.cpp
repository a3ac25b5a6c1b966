// checkpoint.resume parsed once (lib/config/resume.hpp): "" is a fresh start, "auto" the newest
// complete checkpoint, any other text that folder; to_string gives the setting's text back.
#include <catch2/catch.hpp>

#include "lib/config/resume.hpp"

using namespace mtrain::config;

TEST_CASE("resume: none, auto or a folder, and back to its text", "[config][resume]") {
  CHECK(resume_from_text("") == Resume::none());
  CHECK_FALSE(resume_from_text("").given());
  CHECK(resume_from_text("auto") == Resume::automatic());
  CHECK(resume_from_text("auto").given());
  CHECK(resume_from_text("work/checkpoints/step_10") == Resume::at("work/checkpoints/step_10"));
  // Only the exact keyword: a folder named like it in another folder is a folder.
  CHECK(resume_from_text("./auto") == Resume::at("./auto"));
  CHECK(resume_from_text("AUTO") == Resume::at("AUTO"));
  for (const char* text : {"", "auto", "/ckpt/step_3"}) CHECK(to_string(resume_from_text(text)) == text);
}
