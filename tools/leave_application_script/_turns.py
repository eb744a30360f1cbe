"""The model turns of the offline script: what Init and Execute "decide", round by round.

A turn is one model response: text and `tool_use` blocks with `stop_reason: "tool_use"`, or
a closing text with `stop_reason: "end_turn"`. Tool-use ids are derived from a hash of the
actor and a counter, so they look like the API's and never change between runs.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

from tools.leave_application_script._design_formats import format_specifications
from tools.leave_application_script._design_rules import business_rules
from tools.leave_application_script._design_yaml import scenario_design
from tools.leave_application_script._iterations import (
    SampleRun,
    iteration_dir,
    run_iteration,
    sample_files,
    sample_text,
    to_json,
)
from tools.leave_application_script._packages import (
    complete_scenario_input,
    handoff_to_execute_input,
    return_to_init_input,
)
from tools.leave_application_script._reports import (
    DESIGN_PATHS,
    REPORT_FILE,
    SUMMARY_FILE,
    failure_summary,
    layer1_report,
)

Turn = dict[str, Any]
Block = dict[str, Any]

SAMPLES_PER_BATCH: Final = 9  # sample files written per step; each run is then its own step
_ALPHABET: Final = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_YAML: Final = DESIGN_PATHS["unified_scenario_design_path"]
_RULES: Final = DESIGN_PATHS["business_rules_path"]
_FORMATS: Final = DESIGN_PATHS["format_specifications_path"]


class ScriptWriter:
    """Builds one actor's turns and hands out its tool-use ids."""

    def __init__(self, actor: str) -> None:
        self.actor = actor
        self.turns: list[Turn] = []
        self._count = 0

    def _id(self) -> str:
        self._count += 1
        digest = int.from_bytes(hashlib.sha256(f"{self.actor}:{self._count}".encode()).digest())
        chars = []
        for _ in range(22):
            digest, index = divmod(digest, len(_ALPHABET))
            chars.append(_ALPHABET[index])
        return "toolu_01" + "".join(chars)

    def tool(self, name: str, **tool_input: Any) -> Block:
        """A `tool_use` block."""
        return {"type": "tool_use", "id": self._id(), "name": name, "input": tool_input}

    def step(self, text: str, *calls: Block) -> None:
        """A turn that says `text` and calls tools."""
        self.turns.append(
            {"content": [{"type": "text", "text": text}, *calls], "stop_reason": "tool_use"}
        )

    def end(self, text: str) -> None:
        """The closing turn of a round."""
        self.turns.append({"content": [{"type": "text", "text": text}], "stop_reason": "end_turn"})


def _write(script: ScriptWriter, path: str, content: str) -> Block:
    return script.tool("Write", path=path, content=content)


def _init_round_1(init: ScriptWriter) -> None:
    init.step(
        "需求是为员工自助“请假助手”生成评测样本。先写统一场景设计（唯一事实来源）："
        "人设、6 个工具、状态结构、27 个样本的计划和 4 个 checker。",
        _write(init, _YAML, scenario_design(1)),
    )
    init.step(
        "再写被测 Agent 遵守的业务规则（14 条可判定的规则）和 Execute 输出文件的格式规范。",
        _write(init, _RULES, business_rules(1)),
        _write(init, _FORMATS, format_specifications()),
    )
    init.step(
        "三个设计文件已写好，交给 Execute Agent 执行（需人工审批）。",
        init.tool("handoff_to_execute", **handoff_to_execute_input(1)),
    )
    init.end(
        "已完成请假申请场景的设计 v1：unified_scenario_design.yaml、BusinessRules.md、"
        "format_specifications.json，并通过 handoff_to_execute 提交，等待审批后由 Execute 执行。"
    )


def _init_round_2(init: ScriptWriter) -> None:
    out = iteration_dir(1)
    init.step(
        "Execute 返回：iteration_1 成功率 33.3%，critical 问题影响 37% 的样本。"
        "先读问题报告和失败汇总。",
        init.tool("Read", path=f"{out}/{REPORT_FILE}"),
        init.tool("Read", path=f"{out}/{SUMMARY_FILE}"),
    )
    init.step(
        "报告列出 4 个 Layer 1 问题，L1P_001（critical，10 个样本）的典型样本是 BS_MT_001；另有 "
        "BS_MT_024、BS_MT_026 属于 Execute 自己的问题，BS_MT_025 提到员工要求跳过审批人。先看 "
        "BS_MT_001 的 trace 首尾、评测结果和归因。",
        init.tool("Read", path=f"{out}/execution_traces/BS_MT_001_trace.json", mode="head_tail"),
        init.tool("Read", path=f"{out}/evaluation_results/BS_MT_001_eval.json"),
        init.tool("Read", path=f"{out}/attribution_analysis/BS_MT_001_attribution.json"),
    )
    init.step(
        "评测显示 leave_balance_deducted 失败：余额 8.0 未变，且 trace 中没有 "
        "update_employee_leave_balance；trace 尾部的最终状态里有申请和给李娜的通知。按提示读 "
        "trace 中段核对工具调用顺序，同时看 L1P_002 的典型样本 BS_MT_010 的评测。",
        init.tool(
            "Read", path=f"{out}/execution_traces/BS_MT_001_trace.json", offset=41, limit=170
        ),
        init.tool("Read", path=f"{out}/evaluation_results/BS_MT_010_eval.json"),
    )
    init.step(
        "确认：BS_MT_001 依次调用 get_employee_profile → query_leave_balance → "
        "calculate_leave_days → create_leave_application → notify_manager，没有扣减，"
        "并告诉员工“余额将在审批流程完成后由系统更新”——这正是 v1 第 5.3 条（只说“占用”）与第 11 "
        "条（流程无扣减步骤）留下的空白。BS_MT_010 的扣减是对的（4.6 − 1.5），失败只因 "
        "3.0999999999999996 ≠ 3.1 的严格比较，LLM 评判为 pass。重读当前的规则与设计，准备修订。",
        init.tool("Read", path=_RULES),
        init.tool("Read", path=_YAML),
    )
    init.step(
        "修订 BusinessRules v2：第 11 条在创建申请后立即按年度扣减；第 5 条加入跨年拆分、"
        "次年额度预生成和 0.01 天精度；第 3 条写明半天标记语义；按报告观察新增第 7.3 条。",
        _write(init, _RULES, business_rules(2)),
    )
    init.step(
        "同步设计文件 v2：update_employee_leave_balance 增加必填 year 并写明扣减时机，"
        "calculate_leave_days 返回 days_by_year，半天参数改为 start_half=PM / end_half=AM，"
        "两个 checker 改为 0.01 天容差，并记录 change_log。",
        _write(init, _YAML, scenario_design(2)),
    )
    init.step(
        "设计 v2 已落盘，重新交给 Execute（附修改理由与修订历史）。",
        init.tool("handoff_to_execute", **handoff_to_execute_input(2)),
    )
    init.end(
        "已根据 iteration_1 的报告把设计修订为 v2（L1P_001–L1P_004 全部处理，另加第 7.3 条），"
        "并再次 handoff_to_execute，等待审批。"
    )


_CATEGORY_CN: Final = {
    "single_turn": "单轮",
    "multi_turn": "多轮",
    "boundary": "边界",
    "policy_violation": "违规拒绝",
}


def _samples_note(batch: list[SampleRun]) -> str:
    counts = {c: sum(r.spec.category == c for r in batch) for c in _CATEGORY_CN}
    mix = "、".join(f"{_CATEGORY_CN[c]} {n} 个" for c, n in counts.items() if n)
    return f"写入样本 {batch[0].sample_id}–{batch[-1].sample_id}（{mix}）。"


def _run_note(run: SampleRun) -> str:
    if run.passed:
        return f"{run.sample_id} 已在模拟器中执行并评测：通过。写入 trace 与评测结果。"
    failed = "、".join(run.failed_checkers)
    return (
        f"{run.sample_id} 已在模拟器中执行并评测：未通过（{failed}）。写入 trace、评测结果与归因。"
    )


def _write_iteration(
    execute: ScriptWriter, runs: list[SampleRun], opening: str, samples_note: str
) -> None:
    """Layer 3 first (all sample files, in batches), then each sample run and evaluated."""
    for start in range(0, len(runs), SAMPLES_PER_BATCH):
        batch = runs[start : start + SAMPLES_PER_BATCH]
        text = _samples_note(batch)
        execute.step(
            f"{opening}{samples_note}{text}" if start == 0 else text,
            *[_write(execute, run.path("sample"), sample_text(run)) for run in batch],
        )
    for run in runs:
        files = [(p, c) for p, c in sample_files(run) if p != run.path("sample")]
        execute.step(_run_note(run), *[_write(execute, p, c) for p, c in files])
    out = iteration_dir(runs[0].iteration)
    execute.step(
        "27 个样本都已执行并落盘，核对一下各目录的文件数。",
        execute.tool("List", path=out, recursive=True),
    )


def _reports_step(execute: ScriptWriter, runs: list[SampleRun], text: str) -> None:
    out = iteration_dir(runs[0].iteration)
    execute.step(
        text,
        _write(execute, f"{out}/{SUMMARY_FILE}", to_json(failure_summary(runs))),
        _write(execute, f"{out}/{REPORT_FILE}", to_json(layer1_report(runs))),
    )


def _execute_round_1(execute: ScriptWriter) -> None:
    runs = run_iteration(1)
    execute.step(
        "收到设计 v1。先读取三个设计文件，再按 task_templates 生成样本。",
        execute.tool("Read", path=_YAML),
        execute.tool("Read", path=_RULES),
        execute.tool("Read", path=_FORMATS, limit=800),  # past the 400-line default
    )
    _write_iteration(
        execute,
        runs,
        "设计已读完：6 个工具按 tools 段实现为 mock（Layer 2），4 个 checker 按 "
        "validation_logic 实现。",
        "先按 task_templates.sample_plan 生成 27 个样本（Layer 3），再逐个在模拟器中执行、评测。",
    )
    _reports_step(
        execute,
        runs,
        "目录完整：27 个样本、27 条 trace、27 份评测、18 份归因。iteration_1 为 9/27 "
        "通过（33.3%）。归因：L1P_001 扣减时机未明确 10 个（critical），L1P_002 checker "
        "严格相等 3 个，L1P_003 跨年 2 个，L1P_004 半天语义 1 个；另有 Layer 2 工具问题 1 个、"
        "Layer 3 样本问题 1 个。写入 failure_summary.json 与 layer1_problems_report.json。",
    )
    execute.step(
        "critical 问题影响 10/27 = 37.0% 的样本，超过 30% 阈值，根因在设计，返回 Init。",
        execute.tool("return_to_init", **return_to_init_input(runs)),
    )
    execute.end(
        "iteration_1 完成：9/27 通过（33.3%），L1P_001（critical）影响 37.0% 的样本，已 "
        "return_to_init，等待设计修订。"
    )


def _execute_round_2(execute: ScriptWriter) -> None:
    runs = run_iteration(2)
    execute.step(
        "设计已更新为 v2。开始新一轮前重新读取三个设计文件（规则与设计已修订，格式规范未变）。",
        execute.tool("Read", path=_YAML),
        execute.tool("Read", path=_RULES),
        execute.tool("Read", path=_FORMATS, limit=800),
    )
    _write_iteration(
        execute,
        runs,
        "v2 要点：创建后立即按年度扣减、0.01 天容差、跨年拆分、半天语义、第 7.3 条。"
        "同时修复自己的问题：notify_manager 的 mock 目录补全 E3005（Layer 2）。",
        "iteration_2 沿用 27 个样本 ID，按 v2 更新期望；BS_MT_026 的期望按第 9 条改为 submit"
        "（Layer 3）。",
    )
    _reports_step(
        execute,
        runs,
        "iteration_2 为 25/27 通过（92.6%）。BS_MT_020：样本缺少 E1005 的 2026 "
        "年额度记录（Layer 3，记为 L1P_005 low）；BS_MT_025：被测 Agent "
        "在施压下跳过二级审批（Agent 行为）。无 critical 问题。",
    )
    execute.step(
        "成功率 92.6% ≥ 85%，场景完成。",
        execute.tool("complete_scenario", **complete_scenario_input(runs)),
    )
    execute.end(
        "iteration_2 完成：25/27 通过（92.6%），达到 85% 阈值，已 complete_scenario；遗留 "
        "BS_MT_020（样本 fixture）与 BS_MT_025（Agent 行为）两项已记入 known_limitations。"
    )


def build_turns() -> dict[str, list[Turn]]:
    """Both actors' turns, in the order each actor's model is called."""
    init, execute = ScriptWriter("init"), ScriptWriter("execute")
    _init_round_1(init)
    _execute_round_1(execute)
    _init_round_2(init)
    _execute_round_2(execute)
    return {"init": init.turns, "execute": execute.turns}
