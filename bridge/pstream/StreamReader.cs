// The foreign functions of the streaming P oracle's driver (observe.PStreamDriver), embedded and
// written beside it by bridge.CompileStream. They read spec events from standard input, one line
// each as observe.AppendSpecLine writes them: the kind (from 1, 0 or the end of input ends the
// stream), a tag, then the values, tab-separated.
//
// At exit the process writes to the file PCONFORM_PSTREAM_STATE names how many lines it read and
// the tag of the last one, so a verdict can name the event a monitor refused and prove the whole
// stream was read.
//
// The checker keeps every schedule's log in memory for its bug report. A stream has one schedule
// as long as the log, so every ClearEvery lines the logs are emptied (through reflection on
// P 3.1.0's runtime; if that fails, they are left alone and grow): a bug report then holds the
// events since the last clearing and the monitor's message.
using System;
using System.IO;
using System.Reflection;
using System.Text;
using PChecker.Runtime.Values;
using PChecker.Runtime.StateMachines;
using PChecker.Runtime.Logging;

namespace PImplementation
{
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

    static void Start()
    {
      input = new StreamReader(Console.OpenStandardInput(), new UTF8Encoding(false), false, 1 << 16);
      var state = Environment.GetEnvironmentVariable("PCONFORM_PSTREAM_STATE");
      if (!string.IsNullOrEmpty(state)) {
        AppDomain.CurrentDomain.ProcessExit += (s, e) => {
          File.WriteAllText(state, "read " + read + "\nlast " + lastTag + "\n");
        };
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
