// The foreign functions of the streaming P oracle's driver (bridge.PStreamDriver), embedded and
// written beside it by bridge.CompileStream. They read spec events from standard input, one line
// each as bridge.AppendSpecLine writes them: the kind (from 1, 0 or the end of input ends the
// stream), a tag, then the values, tab-separated.
//
// At exit the process writes to the file PCONFORM_PSTREAM_STATE names how many lines it read and
// the tag of the last one, so a verdict can name the event a monitor refused and prove the whole
// stream was read.
//
// StreamDirect and StreamAnnounce hand the events to the monitors without the run's logs, which
// cost most of the checker's time, not the monitors: announce formats each event's payload as
// text and as JSON (with a vector clock), and for each monitor's step the runtime's logs (the
// text and JSON formatters the test registers, and the activity coverage the checker records by
// default, with no option to turn it off) format it again. The direct way dispatches as announce
// does (StateMachine.AnnounceInternal in P 3.1.0): the event built from its payload, to each
// monitor of the machine's test that observes it, in the order of PModule.monitorMap, through the
// runtime's Monitor, which runs the monitor's handler. The runtime's logs are replaced by
// ErrorLogOnly, which keeps the <ErrorLog> line of an assertion (the monitor's message, which
// bridge reads from the bug report) and drops the rest: the bug report's JSON trace and the
// coverage reports stay empty. Both are bound through reflection on P 3.1.0's runtime; if binding
// fails (another P version), StreamDirect says so, the driver announces, and the logs are left as
// they were.
//
// The checker keeps every schedule's log in memory for its bug report. A stream has one schedule
// as long as the log, so every ClearEvery lines the logs are emptied (through reflection too; if
// that fails, they are left alone and grow): a bug report then holds the events since the last
// clearing and the monitor's message.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Text;
using PChecker.Runtime;
using PChecker.Runtime.Events;
using PChecker.Runtime.Values;
using PChecker.Runtime.StateMachines;
using PChecker.Runtime.Logging;

namespace PImplementation
{
  // ErrorLogOnly is the streaming driver's only runtime log: the assertion failures (the
  // <ErrorLog> line of a bug report), written to the runtime's text writer, where the text log
  // wrote them; every other entry dropped.
  public class ErrorLogOnly : IControlledRuntimeLog
  {
    readonly TextWriter output;
    public ErrorLogOnly(TextWriter output) { this.output = output; }
    public void OnAssertionFailure(string error) { output.WriteLine(error); }
    public void OnCreateStateMachine(StateMachineId id, string creatorName, string creatorType) {}
    public void OnExecuteAction(StateMachineId id, string handlingStateName, string currentStateName, string actionName) {}
    public void OnSendEvent(StateMachineId targetStateMachineId, string senderName, string senderType, string senderStateName, Event e, bool isTargetHalted) {}
    public void OnRaiseEvent(StateMachineId id, string stateName, Event e) {}
    public void OnEnqueueEvent(StateMachineId id, Event e) {}
    public void OnDequeueEvent(StateMachineId id, string stateName, Event e) {}
    public void OnReceiveEvent(StateMachineId id, string stateName, Event e, bool wasBlocked) {}
    public void OnWaitEvent(StateMachineId id, string stateName, Type eventType) {}
    public void OnWaitEvent(StateMachineId id, string stateName, params Type[] eventTypes) {}
    public void OnStateTransition(StateMachineId id, string stateName, bool isEntry) {}
    public void OnGotoState(StateMachineId id, string currentStateName, string newStateName) {}
    public void OnDefaultEventHandler(StateMachineId id, string stateName) {}
    public void OnHalt(StateMachineId id, int inboxSize) {}
    public void OnHandleRaisedEvent(StateMachineId id, string stateName, Event e) {}
    public void OnPopStateUnhandledEvent(StateMachineId id, string stateName, Event e) {}
    public void OnExceptionThrown(StateMachineId id, string stateName, string actionName, Exception ex) {}
    public void OnExceptionHandled(StateMachineId id, string stateName, string actionName, Exception ex) {}
    public void OnCreateMonitor(string monitorType) {}
    public void OnMonitorExecuteAction(string monitorType, string stateName, string actionName) {}
    public void OnMonitorProcessEvent(string monitorType, string stateName, string senderName, string senderType, string senderStateName, Event e) {}
    public void OnMonitorRaiseEvent(string monitorType, string stateName, Event e) {}
    public void OnMonitorStateTransition(string monitorType, string stateName, bool isEntry, bool? isInHotState) {}
    public void OnMonitorError(string monitorType, string stateName, bool? isInHotState) {}
    public void OnRandom(object result, string callerName, string callerType) {}
    public void OnStrategyDescription(string strategyName, string description) {}
    public void OnCompleted() {}
  }

  public static partial class GlobalFunctions
  {
    const long ClearEvery = 4096;
    static StreamReader input;
    static string[] fields = new string[0];
    static long read;
    static string lastTag = "";
    static bool boundTried;
    static StringBuilder textLog;
    static object textLock;
    static JsonWriter jsonLog;
    // The direct way, once StreamDirect bound it: the runtime's Monitor(type, event, sender name,
    // sender type, sender state), the sender's three, and per event type its constructor and the
    // monitors that observe it.
    static bool direct;
    static Action<Type, Event, string, string, string> monitor;
    static string senderName, senderType, senderState;
    static Dictionary<Type, (ConstructorInfo make, Type[] monitors)> routes = new Dictionary<Type, (ConstructorInfo, Type[])>();

    static void Start()
    {
      input = new StreamReader(Console.OpenStandardInput(), new UTF8Encoding(false), false, 1 << 16);
      var state = Environment.GetEnvironmentVariable("PCONFORM_PSTREAM_STATE");
      if (!string.IsNullOrEmpty(state)) {
        AppDomain.CurrentDomain.ProcessExit += (s, e) => {
          File.WriteAllText(state, "read " + read + "\nlast " + lastTag + "\ndirect " + (direct ? 1 : 0) + "\n");
        };
      }
    }

    // StreamDirect binds the direct way for machine, the driver; false when it cannot (nothing is
    // changed then). Call it once, before the first event.
    public static PBool StreamDirect(StateMachine machine)
    {
      try {
        var all = BindingFlags.NonPublic | BindingFlags.Public | BindingFlags.Instance;
        var runtime = typeof(StateMachine).GetProperty("Runtime", all).GetValue(machine);
        var mi = runtime.GetType().GetMethod("Monitor", all, null,
          new[] { typeof(Type), typeof(Event), typeof(string), typeof(string), typeof(string) }, null);
        var bound = (Action<Type, Event, string, string, string>)Delegate.CreateDelegate(
          typeof(Action<Type, Event, string, string, string>), runtime, mi);
        var id = typeof(StateMachine).GetProperty("Id", all).GetValue(machine) as StateMachineId;
        var stateName = typeof(StateMachine).GetProperty("CurrentStateName", all).GetValue(machine) as string;
        var writer = runtime.GetType().GetProperty("LogWriter", all).GetValue(runtime);
        var logs = writer.GetType().GetField("Logs", all).GetValue(writer) as HashSet<IControlledRuntimeLog>;
        if (id == null || logs == null || !PModule.monitorMap.ContainsKey(machine.interfaceName)) {
          return (PBool)false;
        }
        var output = runtime.GetType().GetProperty("Logger", all).GetValue(runtime) as TextWriter;
        if (output == null) {
          return (PBool)false;
        }
        logs.Clear();
        logs.Add(new ErrorLogOnly(output));
        monitor = bound;
        senderName = id.Name;
        senderType = id.Type;
        senderState = stateName;
        direct = true;
      } catch (Exception) {
        return (PBool)false;
      }
      return (PBool)true;
    }

    // StreamAnnounce hands the event e with payload to the monitors that observe it, as announce
    // does (see the top of this file). Only after StreamDirect returned true.
    public static void StreamAnnounce(Event e, IPValue payload, StateMachine machine)
    {
      var t = e.GetType();
      if (!routes.TryGetValue(t, out var route)) {
        var observers = new List<Type>();
        foreach (var m in PModule.monitorMap[machine.interfaceName]) {
          if (PModule.monitorObserves[m.Name].Contains(t.Name)) { observers.Add(m); }
        }
        route = (t.GetConstructors().First(c => c.GetParameters().Length > 0), observers.ToArray());
        routes[t] = route;
      }
      var ev = (Event)route.make.Invoke(new object[] { payload });
      foreach (var m in route.monitors) {
        monitor(m, ev, senderName, senderType, senderState);
      }
    }

    static void ClearLogs(StateMachine machine)
    {
      try {
        if (!boundTried) {
          boundTried = true;
          var nf = BindingFlags.NonPublic | BindingFlags.Instance;
          var logger = typeof(StateMachine).GetProperty("Logger", nf).GetValue(machine);
          jsonLog = typeof(StateMachine).GetProperty("JsonLogger", nf).GetValue(machine) as JsonWriter;
          var bf = logger.GetType().GetField("Builder", nf);
          var lf = logger.GetType().GetField("Lock", nf);
          if (bf != null && lf != null) {
            textLog = bf.GetValue(logger) as StringBuilder;
            textLock = lf.GetValue(logger);
          }
        }
        if (jsonLog != null) { jsonLog.Logs.Clear(); }
        if (textLog != null) { lock (textLock) { textLog.Clear(); } }
      } catch (Exception) {
        jsonLog = null;
        textLog = null;
      }
    }

    static string Unescape(string s)
    {
      if (s.IndexOf('\\') < 0) { return s; }
      var b = new StringBuilder(s.Length);
      for (int i = 0; i < s.Length; i++) {
        var c = s[i];
        if (c == '\\' && i + 1 < s.Length) {
          i++;
          c = s[i] == 't' ? '\t' : s[i] == 'n' ? '\n' : s[i];
        }
        b.Append(c);
      }
      return b.ToString();
    }

    public static PInt StreamNext(StateMachine machine)
    {
      if (input == null) { Start(); }
      if (read > 0 && read % ClearEvery == 0) { ClearLogs(machine); }
      var line = input.ReadLine();
      if (line == null || line.Length == 0) { return (PInt)0; }
      read++;
      fields = line.Split('\t');
      lastTag = fields.Length > 1 ? fields[1] : "";
      return (PInt)long.Parse(fields[0]);
    }

    static string Field(PInt i, StateMachine machine)
    {
      var k = (int)(long)i + 2;
      if (k >= fields.Length) {
        machine.Assert(false, "pconform stream: line " + read + " has no value " + (long)i);
      }
      return fields[k];
    }

    public static PInt StreamInt(PInt i, StateMachine machine) { return (PInt)long.Parse(Field(i, machine)); }
    public static PString StreamStr(PInt i, StateMachine machine) { return (PString)Unescape(Field(i, machine)); }
    public static PBool StreamBool(PInt i, StateMachine machine) { return (PBool)(Field(i, machine) == "1"); }
  }
}
